// CMPI_HD marks a function that both compilers build: g++ for the CPU codecs
// and tests, nvcc for the device kernels (as __host__ __device__). The CPU
// build therefore tests the very per-block and per-chunk code the device
// runs; only the launch wrappers (grids, streams, copies) are device-only.
//
// Code under CMPI_HD uses no library calls that the device lacks: bit casts
// go through bits_of/float_of below, and no exceptions (errors are codes).
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define CMPI_HD __host__ __device__
// Unrolls the next loop of constant trip count, so that a local array it
// indexes stays in registers.
#define CMPI_UNROLL _Pragma("unroll")
#else
#define CMPI_HD
#define CMPI_UNROLL
#endif

namespace cmpi::compress::hd {

CMPI_HD inline uint32_t bits_of(float value) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(value);
#else
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
#endif
}

CMPI_HD inline float float_of(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
#endif
}

CMPI_HD inline int popcount32(uint32_t x) {
#if defined(__CUDA_ARCH__)
  return __popc(x);
#else
  return __builtin_popcount(x);
#endif
}

CMPI_HD inline int popcount64(uint64_t x) {
#if defined(__CUDA_ARCH__)
  return __popcll(x);
#else
  return __builtin_popcountll(x);
#endif
}

// Little-endian loads and stores byte by byte: no alignment needed, the same
// on every host (the wire formats are little-endian).
CMPI_HD inline void store_le32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
}
CMPI_HD inline void store_le64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (8 * i));
}
CMPI_HD inline uint32_t load_le32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
CMPI_HD inline uint64_t load_le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

template <typename T>
CMPI_HD inline T min_of(T a, T b) {
  return a < b ? a : b;
}

}  // namespace cmpi::compress::hd
