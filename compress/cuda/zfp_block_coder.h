// ZFP fixed-rate coding of one block of 4 floats into at most 128 bits, the
// per-thread body of the device coder (one thread per block), built by g++
// for the CPU tests and by nvcc for the kernels. The steps are those of
// compress/zfp_fixed_rate.h (block exponent, block floating point, lifting
// transform, negabinary, embedded bit-plane coding cut at maxbits); the
// block's bits are kept in two 64-bit registers instead of a stream, so that
// blocks are coded independently and placed at bit b * maxbits afterwards
// (zfp_stream_bits.h).
//
// Why a second coder next to zfp_fixed_rate_reference.cpp: the reference
// writes through a byte stream one bit at a time and the fast coder uses
// tables and SIMD, neither of which a GPU thread can run; this one needs
// nothing but registers. Tests check it against both and against libzfp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "compress/host_device.h"
#include "compress/zfp_fixed_rate_block.h"

namespace cmpi::compress::cuda {

constexpr uint32_t kZfpBlockValues = 4;
constexpr uint32_t kZfpHeaderBits = 9;  // 1 nonzero flag + 8 exponent bits
constexpr uint32_t kZfpMaxBlockBits = 128;

// Up to 128 bits, bit i of the block in bit i % 64 of word[i / 64].
// Code below picks a word with a branch, never word[i / 64] at run time:
// a run-time index would put the array in the GPU thread's local memory
// (a memory access per bit) instead of two registers.
struct ZfpBlockBits {
  uint64_t word[2] = {0, 0};
};

// ORs the `count` (<= 63) low bits of field into bits [position, position + count).
CMPI_HD inline void zfp_or_bits_at(ZfpBlockBits& bits, uint32_t position, uint64_t field,
                                   uint32_t count) {
  const uint32_t shift = position & 63;
  if (position < 64) {
    bits.word[0] |= field << shift;
    if (shift + count > 64) bits.word[1] |= field >> (64 - shift);
  } else {
    bits.word[1] |= field << shift;
  }
}

// Bits [position, position + count) as the low bits of the result, count <= 63.
CMPI_HD inline uint64_t zfp_bits_at(const ZfpBlockBits& bits, uint32_t position, uint32_t count) {
  const uint32_t shift = position & 63;
  uint64_t value;
  if (position < 64) {
    value = bits.word[0] >> shift;
    if (shift != 0 && shift + count > 64) value |= bits.word[1] << (64 - shift);
  } else {
    value = bits.word[1] >> shift;
  }
  return value & ((uint64_t{1} << count) - 1);
}

// Appends bits LSB first to a ZfpBlockBits.
class ZfpBlockWriter {
 public:
  CMPI_HD explicit ZfpBlockWriter(ZfpBlockBits& bits) : bits_(bits) {}
  CMPI_HD uint32_t put_bit(uint32_t bit) {
    bit &= 1u;
    zfp_or_bits_at(bits_, position_++, bit, 1);
    return bit;
  }
  // Writes the low `count` bits of value (count <= 9 here); returns value >> count.
  CMPI_HD uint64_t put_bits(uint64_t value, uint32_t count) {
    zfp_or_bits_at(bits_, position_, value & ((uint64_t{1} << count) - 1), count);
    position_ += count;
    return value >> count;
  }

 private:
  ZfpBlockBits& bits_;
  uint32_t position_ = 0;
};

class ZfpBlockReader {
 public:
  CMPI_HD explicit ZfpBlockReader(const ZfpBlockBits& bits) : bits_(bits) {}
  CMPI_HD uint32_t get_bit() { return static_cast<uint32_t>(zfp_bits_at(bits_, position_++, 1)); }
  // The next `count` bits (count <= 9 here), the first in bit 0.
  CMPI_HD uint64_t get_bits(uint32_t count) {
    const uint64_t value = zfp_bits_at(bits_, position_, count);
    position_ += count;
    return value;
  }

 private:
  const ZfpBlockBits& bits_;
  uint32_t position_ = 0;
};

// frexp's exponent of the largest |value|, clamped to >= -126 (every float
// denormal then counts as -126), or -127 for an all-zero block. Read from the
// float bits, so it needs no libm: a normal float with biased exponent E lies
// in [2^(E-127), 2^(E-126)), frexp's exponent E - 126. Finite input only.
CMPI_HD inline int zfp_block_exponent(const float* f) {
  uint32_t largest = 0;
  for (uint32_t i = 0; i < kZfpBlockValues; ++i) {
    const uint32_t magnitude = hd::bits_of(f[i]) & 0x7fffffffu;
    if (magnitude > largest) largest = magnitude;
  }
  if (largest == 0) return -127;
  const int biased = static_cast<int>(largest >> 23);
  return biased == 0 ? -126 : biased - 126;
}

// 2^exponent as a float, +inf above the float range (as ldexp gives); the
// exponent here is never below -98, so no denormal results.
CMPI_HD inline float zfp_power_of_two(int exponent) {
  const int biased = exponent + 127;
  return hd::float_of(biased > 254 ? 0x7f800000u : static_cast<uint32_t>(biased) << 23);
}

// Bit planes 31..0 of the 4 negabinary values under a budget of `bits`:
// the bits of values already significant verbatim, then group tests each
// followed by a unary scan to the next set bit (the last value implied).
CMPI_HD inline void zfp_encode_planes(const uint32_t* u, uint32_t bits, ZfpBlockWriter& w) {
  uint32_t significant = 0;
  for (uint32_t plane = 32; bits && plane-- > 0;) {
    uint64_t x = 0;
    for (uint32_t i = 0; i < kZfpBlockValues; ++i) x |= uint64_t((u[i] >> plane) & 1u) << i;
    const uint32_t verbatim = hd::min_of(significant, bits);
    bits -= verbatim;
    x = w.put_bits(x, verbatim);
    for (; bits && significant < kZfpBlockValues; x >>= 1, ++significant) {
      --bits;
      if (!w.put_bit(x != 0)) break;
      for (; bits && significant < kZfpBlockValues - 1; x >>= 1, ++significant) {
        --bits;
        if (w.put_bit(static_cast<uint32_t>(x & 1u))) break;
      }
    }
  }
}

CMPI_HD inline void zfp_decode_planes(ZfpBlockReader& r, uint32_t bits, uint32_t* u) {
  for (uint32_t i = 0; i < kZfpBlockValues; ++i) u[i] = 0;
  uint32_t significant = 0;
  for (uint32_t plane = 32; bits && plane-- > 0;) {
    const uint32_t verbatim = hd::min_of(significant, bits);
    bits -= verbatim;
    uint64_t x = r.get_bits(verbatim);
    for (; bits && significant < kZfpBlockValues; ++significant) {
      --bits;
      if (!r.get_bit()) break;
      for (; bits && significant < kZfpBlockValues - 1; ++significant) {
        --bits;
        if (r.get_bit()) break;
      }
      // The scan stopped at a set bit, or the budget ran out there: libzfp
      // sets that value's bit either way.
      x += uint64_t{1} << significant;
    }
    // x < 16 (one bit per value); constant indices keep u in registers.
    for (uint32_t i = 0; i < kZfpBlockValues; ++i)
      u[i] += static_cast<uint32_t>((x >> i) & 1u) << plane;
  }
}

// The first maxbits bits of one block's code (the rest of the 128 are zero).
// 9 <= maxbits <= 128; f holds 4 finite floats (a partial block padded first).
CMPI_HD inline ZfpBlockBits zfp_encode_block(const float* f, uint32_t maxbits) {
  ZfpBlockBits bits;
  ZfpBlockWriter w(bits);
  const int emax = zfp_block_exponent(f);
  if (emax == -127) {
    w.put_bit(0);  // all-zero block: one 0 bit, the rest padding
    return bits;
  }
  w.put_bits(2u * static_cast<uint32_t>(emax + 127) + 1u, kZfpHeaderBits);
  const float scale = zfp_power_of_two(30 - emax);
  int32_t y[kZfpBlockValues];
  for (uint32_t i = 0; i < kZfpBlockValues; ++i) y[i] = zfp_fixed_rate::block::to_int(scale * f[i]);
  zfp_fixed_rate::block::fwd_lift(y);
  uint32_t u[kZfpBlockValues];
  for (uint32_t i = 0; i < kZfpBlockValues; ++i) u[i] = zfp_fixed_rate::block::to_negabinary(y[i]);
  zfp_encode_planes(u, maxbits - kZfpHeaderBits, w);
  return bits;
}

// The 4 floats of a block from its first maxbits bits (bits past maxbits are
// ignored). Any bits decode to some floats.
CMPI_HD inline void zfp_decode_block(const ZfpBlockBits& bits, uint32_t maxbits, float* f) {
  ZfpBlockReader r(bits);
  if (!r.get_bit()) {
    for (uint32_t i = 0; i < kZfpBlockValues; ++i) f[i] = 0;
    return;
  }
  const int emax = static_cast<int>(r.get_bits(8)) - 127;
  uint32_t u[kZfpBlockValues];
  zfp_decode_planes(r, maxbits - kZfpHeaderBits, u);
  int32_t y[kZfpBlockValues];
  for (uint32_t i = 0; i < kZfpBlockValues; ++i)
    y[i] = zfp_fixed_rate::block::from_negabinary(u[i]);
  zfp_fixed_rate::block::inv_lift(y);
  // 2^(emax - 30) >= 2^-157: the reference's ldexp gives a denormal or 0
  // there, which the float product below must see too.
  const int exponent = emax - 30;
  const float scale = exponent >= -126 ? zfp_power_of_two(exponent)
                      : exponent >= -149
                          ? hd::float_of(uint32_t{1} << static_cast<uint32_t>(exponent + 149))
                          : 0.f;
  for (uint32_t i = 0; i < kZfpBlockValues; ++i) f[i] = scale * static_cast<float>(y[i]);
}

}  // namespace cmpi::compress::cuda
