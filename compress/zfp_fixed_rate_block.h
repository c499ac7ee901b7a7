// Per-block arithmetic of ZFP fixed-rate coding (zfp_fixed_rate.h) shared by
// the reference and the fast coder: the float -> int cast as x86 truncates,
// the lifting transform pair, negabinary and libzfp's partial-block padding.
// Integer arithmetic wraps (libzfp's int32 arithmetic compiles to wrapping
// instructions; an overflowing cast makes INT_MIN inputs that do wrap).
// CMPI_HD: the device coder (compress/cuda/zfp_block_coder.h) runs them too.
#pragma once

#include <cstddef>
#include <cstdint>

#include "compress/host_device.h"

namespace cmpi::compress::zfp_fixed_rate::block {

constexpr uint32_t kNegabinaryMask = 0xaaaaaaaau;

// (int32)p as cvttss2si computes it: truncation toward zero, INT_MIN for NaN
// and for values outside the int32 range.
CMPI_HD inline int32_t to_int(float p) {
  if (p >= -2147483648.f && p < 2147483648.f) return static_cast<int32_t>(p);
  return INT32_MIN;
}

CMPI_HD inline int32_t add(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}
CMPI_HD inline int32_t sub(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) - static_cast<uint32_t>(b));
}
CMPI_HD inline int32_t shl1(int32_t a) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) << 1);
}

// Forward decorrelating transform of one 4-value block, in place:
//        ( 4  4  4  4) (x)
// 1/16 * ( 5  1 -1 -5) (y)
//        (-4  4  4 -4) (z)
//        (-2  6 -6  2) (w)
// as a sequence of lifting steps (arithmetic shifts).
CMPI_HD inline void fwd_lift(int32_t* p) {
  int32_t x = p[0], y = p[1], z = p[2], w = p[3];
  x = add(x, w), x >>= 1, w = sub(w, x);
  z = add(z, y), z >>= 1, y = sub(y, z);
  x = add(x, z), x >>= 1, z = sub(z, x);
  w = add(w, y), w >>= 1, y = sub(y, w);
  w = add(w, y >> 1), y = sub(y, w >> 1);
  p[0] = x, p[1] = y, p[2] = z, p[3] = w;
}

// Inverse of fwd_lift (exact up to the bits fwd_lift's shifts dropped).
CMPI_HD inline void inv_lift(int32_t* p) {
  int32_t x = p[0], y = p[1], z = p[2], w = p[3];
  y = add(y, w >> 1), w = sub(w, y >> 1);
  y = add(y, w), w = shl1(w), w = sub(w, y);
  z = add(z, x), x = shl1(x), x = sub(x, z);
  y = add(y, z), z = shl1(z), z = sub(z, y);
  w = add(w, x), x = shl1(x), x = sub(x, w);
  p[0] = x, p[1] = y, p[2] = z, p[3] = w;
}

CMPI_HD inline uint32_t to_negabinary(int32_t y) {
  return (static_cast<uint32_t>(y) + kNegabinaryMask) ^ kNegabinaryMask;
}
CMPI_HD inline int32_t from_negabinary(uint32_t u) {
  return static_cast<int32_t>((u ^ kNegabinaryMask) - kNegabinaryMask);
}

// libzfp's padding of a partial 1-D block of count = 1..3 values:
// [a a a a], [a b b a], [a b c a].
CMPI_HD inline void pad_partial(const float* in, size_t count, float* f) {
  for (size_t i = 0; i < count; ++i) f[i] = in[i];
  if (count == 1) f[1] = f[0];
  if (count <= 2) f[2] = f[1];
  f[3] = f[0];
}

}  // namespace cmpi::compress::zfp_fixed_rate::block
