# Sourced by the scripts and the tests that run Python: where the project's
# Python environment is (scripts/setup.sh creates it). It lives outside the
# checkout so that a fresh clone (CI) reuses it instead of downloading
# LibTorch again.
#   CMPI_VENV    the environment's folder (default ~/.cache/cmpi-train/venv)
#   CMPI_PYTHON  the interpreter to use (default: the environment's, else python3)
#   CMPI_REFERENCE_DIR  reference files setup fetched from PyPI (GPT-2's ranks)
export CMPI_VENV="${CMPI_VENV:-${HOME:-/root}/.cache/cmpi-train/venv}"
export CMPI_REFERENCE_DIR="${CMPI_REFERENCE_DIR:-$(dirname "$CMPI_VENV")/reference}"
if [ -z "${CMPI_PYTHON:-}" ]; then
  if [ -x "$CMPI_VENV/bin/python" ]; then
    CMPI_PYTHON="$CMPI_VENV/bin/python"
  else
    CMPI_PYTHON="$(command -v python3 || echo python3)"
  fi
fi
export CMPI_PYTHON
