#!/usr/bin/env bash
# Run HERE, on the Debian build machine, before a device call: bundles what
# the GPU machine lacks for bench/gpu/train_on_device.sh into
# .gpucarry/bundle.tar.xz (ignored by git, named in the device call's
# `carry`; train_on_device.sh unpacks it), holding:
#   bin/   cmpi-train and the device test binary, built against this
#          checkout's LibTorch (the torch 2.11.0+cu130 wheel, the same
#          version the GPU machine's Python holds: the binaries load that
#          machine's libtorch through LD_LIBRARY_PATH);
#   lib/   the shared libraries they and OpenMPI need that the GPU machine
#          does not have (yaml-cpp, zfp, protobuf, hwloc, pmix, ...);
#          LibTorch, CUDA, glibc and libstdc++ are the GPU machine's own;
#   ompi/  Debian's OpenMPI runtime (orterun, orted, components, help
#          files) under one folder, started there with OPAL_PREFIX; the
#          components for networks a single node does not use (UCX, OFI,
#          verbs, PSM) are left out, and with them their libraries;
#   data/  the byte-level King James Bible (scripts/prepare_real_text.sh)
#          that configs/neox-scaled.yaml trains on.
# Usage: bash bench/gpu/prepare_train_carry.sh [build-dir]   (default build/)
# Checks that the archive stays well under the device call's 64 MiB.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${1:-$ROOT/build}"
CARRY="$(mktemp -d)/gpucarry"  # assembled here, archived into .gpucarry/
ARCHIVE="$ROOT/.gpucarry/bundle.tar.xz"
LIMIT_MIB=40  # of the call's 64 MiB: the working tree travels too

grep -qx '/.gpucarry/' "$ROOT/.git/info/exclude" 2>/dev/null ||
  echo '/.gpucarry/' >>"$ROOT/.git/info/exclude"

echo "== build (cmpi-train, cmpi_device_mpi_tests) in $BUILD"
CMPI_BUILD_DIR="$BUILD" bash "$ROOT/scripts/build.sh" >/dev/null
cmake --build "$BUILD" --target cmpi-train cmpi_device_mpi_tests

rm -rf "$CARRY"
mkdir -p "$CARRY/bin" "$CARRY/lib" "$CARRY/ompi" "$CARRY/data"
for binary in trainer/cmpi-train tests/trainer/cmpi_device_mpi_tests; do
  strip --strip-unneeded -o "$CARRY/bin/$(basename "$binary")" "$BUILD/$binary"
done

echo "== OpenMPI's runtime from its Debian packages"
for package in openmpi-bin openmpi-common libopenmpi3; do
  dpkg -L "$package" | while read -r path; do
    case "$path" in
      /usr/share/doc/* | /usr/share/man/* | *java* | *fortran* | *mpifh* | *usempi*) continue ;;
      *ucx* | *_ofi* | *openib* | *psm* | *_uct* | *verbs* | *usnic* | *portals*) continue ;;
    esac
    if [ -f "$path" ] || [ -L "$path" ]; then
      mkdir -p "$CARRY/ompi$(dirname "$path")"
      cp -a "$path" "$CARRY/ompi$path"
    fi
  done
done

echo "== the shared libraries the GPU machine lacks"
# Everything the binaries, OpenMPI's programs and its components resolve,
# except LibTorch and CUDA (the GPU machine's), the C and C++ runtimes, and
# OpenMPI's own libraries (carried above).
{
  for f in "$CARRY"/bin/* "$CARRY"/ompi/usr/bin/orted "$CARRY"/ompi/usr/bin/orterun \
    "$CARRY"/ompi/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/*.so; do
    ldd "$f" 2>/dev/null | awk '/=> \//{print $3}'
  done
} | sort -u | grep -v -E '/torch/lib/|/nvidia/|/cuda|libcuda\.so|libnvidia|/libc\.so|/libm\.so|/libstdc\+\+|/libgcc_s|/ld-linux|/libpthread|/libdl\.so|/librt\.so|/libutil\.so|/libmpi|/libopen-(pal|rte)|/libmca_common' |
  while read -r library; do cp -L "$library" "$CARRY/lib/"; done

echo "== data: the King James Bible in bytes"
(cd "$ROOT" && bash scripts/prepare_real_text.sh >/dev/null)
cp "$ROOT"/.cache/real_text/kjv_bytes.bin "$ROOT"/.cache/real_text/kjv_bytes.idx "$CARRY/data/"

mkdir -p "$(dirname "$ARCHIVE")"
rm -f "$ARCHIVE"
tar -cJf "$ARCHIVE" -C "$CARRY" .
unpacked_mib=$(( $(du -sb "$CARRY" | cut -f1) / 1048576 ))
size_mib=$(( $(stat -c %s "$ARCHIVE") / 1048576 ))
echo "carry: $ARCHIVE, ${size_mib} MiB (${unpacked_mib} MiB unpacked; $(ls "$CARRY/lib" | wc -l) libraries)"
rm -rf "$(dirname "$CARRY")"
if [ "$size_mib" -ge "$LIMIT_MIB" ]; then
  echo "prepare_train_carry.sh: ${size_mib} MiB is over the ${LIMIT_MIB} MiB this bundle may take" >&2
  exit 1
fi
