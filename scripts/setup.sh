#!/usr/bin/env bash
# Installs every build and run dependency from Debian's packages, only what is
# missing. Idempotent and non-interactive; needs root (or sudo) to install.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libtorch-dev libopenblas0-openmp
  libopenmpi-dev openmpi-bin
  libzfp-dev libyaml-cpp-dev libgtest-dev
  libzstd-dev liblz4-dev libblosc-dev
  libicu-dev
  iproute2
  python3-torch python3-matplotlib python3-numpy python3-yaml
  bible-kjv bible-kjv-text
  slurm-wlm slurm-wlm-basic-plugins munge bc
)

# node and npm run the reference encoders of two tests (GPT-2's and
# tokenizer.json's). A machine may have
# them from elsewhere (NodeSource's nodejs bundles npm and conflicts with
# Debian's npm package): install Debian's only where the commands are absent.
command -v node >/dev/null 2>&1 || PACKAGES+=(nodejs)
command -v npm >/dev/null 2>&1 || PACKAGES+=(npm)

missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done

# LibTorch calls whatever libblas.so.3 resolves to. Debian's reference BLAS
# runs a GEMM ~10x slower than OpenBLAS, so point the alternative at OpenBLAS
# even where someone chose the reference one by hand.
use_openblas() {
  local arch alt target
  arch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
  for lib in blas lapack; do
    alt="lib$lib.so.3-$arch"
    target="/usr/lib/$arch/openblas-openmp/lib$lib.so.3"
    [ -e "$target" ] || continue
    if [ "$(readlink -f "/usr/lib/$arch/lib$lib.so.3")" != "$(readlink -f "$target")" ]; then
      echo "setup: pointing lib$lib.so.3 at OpenBLAS ($target)"
      $SUDO update-alternatives --set "$alt" "$target" >/dev/null ||
        echo "setup: warning: could not switch lib$lib.so.3 to OpenBLAS (needs root)" >&2
    fi
  done
}

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  use_openblas
  exit 0
fi

echo "setup: installing ${missing[*]}"
if [ -n "$SUDO" ]; then
  command -v sudo >/dev/null || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
use_openblas
echo "setup: done"
