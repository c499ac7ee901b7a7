#!/usr/bin/env bash
# Installs every build and run dependency, only what is missing: Debian's
# packages, then the project's Python environment from PyPI (LibTorch comes
# from the pinned torch wheel in it; scripts/python-requirements.txt), then
# the reference files the tests compare against. Idempotent and
# non-interactive; needs root (or sudo) for the Debian packages.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libopenmpi-dev openmpi-bin
  libzfp-dev libyaml-cpp-dev libgtest-dev
  libzstd-dev liblz4-dev libblosc-dev
  libicu-dev
  libprotobuf-dev protobuf-compiler
  iproute2
  python3-venv python3-matplotlib python3-numpy python3-yaml
  bible-kjv bible-kjv-text
  slurm-wlm slurm-wlm-basic-plugins munge bc
  ccache
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} Debian packages present"
else
  echo "setup: installing ${missing[*]}"
  if [ -n "$SUDO" ]; then
    command -v sudo >/dev/null || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt_log=$(mktemp)
  if ! { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$apt_log" 2>&1; then
    echo "setup: could not install Debian packages (${missing[*]}): $(grep -E '^(E|W):' "$apt_log" | head -1)" >&2
    echo "setup: apt's log: $apt_log" >&2
    exit 1
  fi
  rm -f "$apt_log"
fi
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
source "$ROOT/scripts/python_env.sh"
bash "$ROOT/scripts/setup_python.sh"
echo "setup: done"
