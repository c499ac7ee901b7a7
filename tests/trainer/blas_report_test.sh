#!/usr/bin/env bash
# cmpi-train says at start-up which BLAS LibTorch runs on, with a measured
# GEMM rate; on the reference BLAS it warns loudly (on stderr) and names it.
# It also says that it set the C allocator to reuse freed tensors, and leaves
# the allocator alone (and says nothing) when GLIBC_TUNABLES configures it.
# Usage: blas_report_test.sh CMPI_TRAIN CONFIG WORKDIR
set -euo pipefail
exe="$1"; config="$2"; work="$3"
rm -rf "$work"; mkdir -p "$work"
args=(--config "$config" --set training.steps=1 --set training.warmup_steps=0
      --set run.dir="$work" --set log.every=1)

"$exe" "${args[@]}" >"$work/default.out" 2>"$work/default.err"
grep -E '^blas: .* \| GEMM 512x256x1024: [0-9.]+ GFLOP/s on 1 thread$' "$work/default.out" \
  || { echo "FAIL: no blas line"; cat "$work/default.out"; exit 1; }

grep -qx 'malloc: mmap threshold 64 MiB, trim threshold 512 MiB (freed tensors reused)' \
  "$work/default.out" || { echo "FAIL: no malloc line"; cat "$work/default.out"; exit 1; }
GLIBC_TUNABLES=glibc.malloc.trim_threshold=1048576 "$exe" "${args[@]}" >"$work/tunables.out" \
  2>"$work/tunables.err"
if grep -q '^malloc:' "$work/tunables.out"; then
  echo "FAIL: the allocator was set although GLIBC_TUNABLES configures it"; exit 1
fi

# Force the reference BLAS in front of whatever libblas.so.3 resolves to.
reference=$(ls /usr/lib/*/blas/libblas.so.3 2>/dev/null | head -1 || true)
if [[ -z $reference ]]; then
  echo "reference BLAS not installed: warning path not exercised"
  exit 0
fi
LD_PRELOAD="$reference" "$exe" "${args[@]}" >"$work/reference.out" 2>"$work/reference.err"
# A LibTorch with MKL inside (PyTorch's wheels) never calls a preloaded
# libblas.so.3: the probe must keep naming MKL and must not warn.
if grep -q '^blas: Intel MKL (linked into LibTorch)' "$work/default.out"; then
  grep -q '^blas: Intel MKL (linked into LibTorch)' "$work/reference.out" \
    || { echo "FAIL: a preloaded reference BLAS was reported as LibTorch's"; cat "$work/reference.out"; exit 1; }
  grep -q WARNING "$work/reference.err" && { echo "FAIL: warned about a BLAS LibTorch does not call"; exit 1; }
  echo PASS
  exit 0
fi
grep -q '^blas: reference BLAS' "$work/reference.out" \
  || { echo "FAIL: reference BLAS not recognised"; cat "$work/reference.out"; exit 1; }
grep -q 'WARNING: LibTorch runs on the reference BLAS' "$work/reference.err" \
  || { echo "FAIL: no warning on the reference BLAS"; cat "$work/reference.err"; exit 1; }
if grep -q '^blas: OpenBLAS' "$work/default.out"; then
  grep -q WARNING "$work/default.err" && { echo "FAIL: warned on OpenBLAS"; exit 1; }
fi
echo PASS
