#!/usr/bin/env bash
# The project's Python environment: a virtual environment outside the
# checkout ($CMPI_VENV, scripts/python_env.sh) holding the pinned torch wheel
# (whose LibTorch the build links) and the test suite's reference libraries
# (scripts/python-requirements.txt), plus GPT-2's published BPE ranks for the
# tokenizer reference tests. A second run installs nothing: the environment
# records the hash of the requirements it was built from. Any failure is one
# line naming what could not be installed and why, and a nonzero exit.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
source "$ROOT/scripts/python_env.sh"
REQUIREMENTS="$ROOT/scripts/python-requirements.txt"
STAMP="$CMPI_VENV/.cmpi-requirements.sha256"
# The torch wheel and its CUDA libraries take about 5 GB once unpacked; pip
# needs the download beside it.
NEEDED_GB=8

fail() {
  echo "setup: $1" >&2
  exit 1
}

# Why pip failed, in one phrase, from its log.
pip_failure_reason() {
  local log=$1
  if grep -q "No space left on device" "$log"; then
    echo "disk full ($(df -h --output=avail "$(dirname "$CMPI_VENV")" | tail -1 | tr -d ' ') free)"
  elif grep -qiE "Network is unreachable|Failed to establish|Temporary failure in name resolution|Name or service not known|Connection refused|timed out|ProxyError|SSLError|from versions: none" "$log"; then
    echo "no package registry reached (PyPI): $(grep -m1 -E "No matching distribution|Could not find a version" "$log" | sed 's/^ERROR: //')"
  elif grep -qE "No matching distribution|Could not find a version" "$log"; then
    grep -m1 -E "No matching distribution|Could not find a version" "$log"
  else
    grep -m1 -E "^ERROR" "$log" || tail -1 "$log"
  fi
}

python_environment() {
  local want have
  want=$(sha256sum "$REQUIREMENTS" | cut -d' ' -f1)
  have=$(cat "$STAMP" 2>/dev/null || true)
  if [ "$want" = "$have" ] && "$CMPI_VENV/bin/python" -c "import torch" >/dev/null 2>&1; then
    echo "setup: python environment present ($CMPI_VENV, torch $("$CMPI_VENV/bin/python" -c 'import torch; print(torch.__version__)'))"
    return
  fi
  local parent
  parent=$(dirname "$CMPI_VENV")
  mkdir -p "$parent" || fail "cannot create $parent for the python environment"
  local free_gb
  free_gb=$(df -BG --output=avail "$parent" | tail -1 | tr -dc '0-9')
  [ "${free_gb:-0}" -ge "$NEEDED_GB" ] ||
    fail "cannot install the python environment into $CMPI_VENV: disk full (${free_gb} GB free, about $NEEDED_GB GB needed)"
  if [ ! -x "$CMPI_VENV/bin/python" ]; then
    /usr/bin/python3 -m venv "$CMPI_VENV" ||
      fail "cannot create a virtual environment at $CMPI_VENV (is python3-venv installed?)"
  fi
  echo "setup: installing into $CMPI_VENV: $(grep -vE '^\s*(#|$)' "$REQUIREMENTS" | tr '\n' ' ')"
  local log="$parent/pip-install.log"
  if ! "$CMPI_VENV/bin/python" -m pip install --disable-pip-version-check -r "$REQUIREMENTS" >"$log" 2>&1; then
    fail "could not install the python environment (scripts/python-requirements.txt) into $CMPI_VENV: $(pip_failure_reason "$log") (pip's log: $log)"
  fi
  "$CMPI_VENV/bin/python" -c "import torch, transformers, tokenizers, tiktoken, safetensors" >>"$log" 2>&1 ||
    fail "the python environment at $CMPI_VENV does not import torch/transformers/tokenizers/tiktoken/safetensors (log: $log)"
  echo "$want" >"$STAMP"
  echo "setup: python environment ready (torch $("$CMPI_VENV/bin/python" -c 'import torch; print(torch.__version__)'))"
}

# GPT-2's byte-level BPE ranks (50,256 tokens; the published encoder in
# tiktoken's file format) as PyPI ships them: in the openai-whisper source
# distribution, whose English tokenizer is GPT-2's. Only that one file is
# kept; the package is never installed.
WHISPER=openai-whisper==20250625
reference_files() {
  local ranks="$CMPI_REFERENCE_DIR/gpt2.tiktoken"
  if [ -s "$ranks" ]; then
    echo "setup: reference files present ($CMPI_REFERENCE_DIR)"
    return
  fi
  mkdir -p "$CMPI_REFERENCE_DIR"
  local download log
  download=$(mktemp -d)
  log="$CMPI_REFERENCE_DIR/pip-download.log"
  echo "setup: fetching GPT-2's BPE ranks ($WHISPER from PyPI, one file kept)"
  "$CMPI_VENV/bin/python" -m pip download --disable-pip-version-check -q --no-deps \
    --no-binary :all: "$WHISPER" -d "$download" >"$log" 2>&1 ||
    fail "could not fetch $WHISPER (GPT-2's BPE ranks for the tokenizer tests): $(pip_failure_reason "$log") (log: $log)"
  tar -xzf "$download"/*.tar.gz -C "$download" --wildcards '*/whisper/assets/gpt2.tiktoken' ||
    fail "$WHISPER has no whisper/assets/gpt2.tiktoken"
  mv "$download"/*/whisper/assets/gpt2.tiktoken "$ranks.tmp" && mv "$ranks.tmp" "$ranks"
  rm -rf "$download"
}

python_environment
reference_files
