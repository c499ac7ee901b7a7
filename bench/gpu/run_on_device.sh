#!/usr/bin/env bash
# One call on a machine with a GPU: builds the torch-free layers with
# CMPI_CUDA=ON, runs the device tests, then the device benchmarks, and prints
# the figures with the GPU model. Usage (from the repository root):
#   bash bench/gpu/run_on_device.sh [build-dir]   (default build-gpu)
# Environment: CMPI_CUDA_ARCH (default 90: H100), CMPI_DEVICE_MIB (codec
# benchmark size, default 256), CMPI_DEVICE_RANKS (collective ranks sharing
# the GPU, default 2).
# Figures of an H100 and the per-kernel times behind them: bench/gpu/README.md.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${1:-$ROOT/build-gpu}"
ARCH="${CMPI_CUDA_ARCH:-90}"
MIB="${CMPI_DEVICE_MIB:-256}"
RANKS="${CMPI_DEVICE_RANKS:-2}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

echo "== GPU"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true

echo "== build (CMPI_CUDA=ON, sm_$ARCH)"
start=$(date +%s)
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMPI_TORCH_FREE_ONLY=ON \
  -DCMPI_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$ARCH" -DCMPI_ASAN_TESTS=OFF >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target cmpi_gpu_tests cmpi_gpu_mpi_tests cmpi_compress_tests \
  cmpi_comm_tests cmpi_comm_mpi_tests cmpi-bench
echo "build: $(( $(date +%s) - start )) s"

echo "== device tests"
status=0
"$BUILD/tests/gpu/cmpi_gpu_tests" || status=1
echo "== device-tagged Communicator calls on the GPU against the host calls, $RANKS ranks"
mpirun --oversubscribe -np "$RANKS" "$BUILD/tests/gpu/cmpi_gpu_mpi_tests" || status=1
echo "== CPU tests of the shared device steps"
"$BUILD/tests/compress/cmpi_compress_tests" --gtest_filter='*Device*' || status=1
"$BUILD/tests/comm/cmpi_comm_tests" --gtest_filter='*Staging*' || status=1
echo "== device collectives (FakeDevice) against the CPU collectives, and device-tagged"
echo "   Communicator calls against the host calls, $RANKS ranks"
mpirun --oversubscribe -np "$RANKS" "$BUILD/tests/comm/cmpi_comm_mpi_tests" \
  --gtest_filter='Device*' || status=1

echo "== cmpi-bench codec --device cuda ($MIB MiB)"
"$BUILD/bench/cmpi-bench" codec --device cuda --mib "$MIB" --reps 10 || status=1

echo "== cmpi-bench collective --device cuda ($RANKS ranks on one GPU)"
# Each run: plain staged, then the codec; all-gather, all-to-all,
# reduce-scatter, all-reduce, broadcast.
for codec in zfp:rate=16 mpc:dim=auto; do
  for mib in 4 64 256; do
    mpirun --oversubscribe -np "$RANKS" "$BUILD/bench/cmpi-bench" collective --device cuda \
      --mib "$mib" --reps 5 --codec "$codec" || status=1
  done
done
exit $status
