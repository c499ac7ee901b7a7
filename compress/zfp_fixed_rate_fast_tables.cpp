// The fast ZFP coder's tables (zfp_fixed_rate_fast.h): for every count n of
// values already significant, the code the reference encoder writes for one
// bit plane (and for two back to back), and the plane the reference decoder
// reads from the next 7 bits under each remaining budget (a code the budget
// cuts included); also the float step 2^(e - 157) of each block exponent.
// Built once from the reference's per-plane rules, so the fast coder's
// lookups give the reference's bits by construction.
#include <algorithm>
#include <cmath>

#include "compress/zfp_fixed_rate_fast.h"

namespace cmpi::compress::zfp_fixed_rate::fast {
namespace {

// The code of one plane (nibble x) given n significant values, unbudgeted,
// as the reference encoder writes it (n = 4: the 4 bits verbatim).
EncodeEntry plane_code(uint32_t n, uint32_t x) {
  uint32_t bits = x & ((1u << n) - 1), length = n;
  auto put = [&](uint32_t bit) {
    bits |= bit << length++;
    return bit;
  };
  x >>= n;
  for (; n < 4; x >>= 1, n++) {
    if (put(x != 0)) {
      for (; n < 3; x >>= 1, n++)
        if (put(x & 1u)) break;
    } else {
      break;
    }
  }
  return {static_cast<uint8_t>(bits), static_cast<uint8_t>(length), static_cast<uint8_t>(n)};
}

// The plane decoded from the bits of v given n significant values and a
// budget of `bits`, as the reference decoder reads it: where the budget cuts
// a scan, the bit the scan stopped at is set.
DecodeEntry plane_decode(uint32_t n, uint32_t bits, uint32_t v) {
  const uint32_t m = std::min(n, bits);
  uint32_t x = v & ((1u << m) - 1), pos = m;
  bits -= m;
  auto get = [&] { return (v >> pos++) & 1u; };
  for (; bits && n < 4; n++) {
    bits--;
    if (get()) {
      for (; bits && n < 3; n++) {
        bits--;
        if (get()) break;
      }
      x += 1u << n;
    } else {
      break;
    }
  }
  return {static_cast<uint8_t>(x), static_cast<uint8_t>(pos), static_cast<uint8_t>(n)};
}

}  // namespace

Tables build_tables() {
  Tables t{};
  for (uint32_t n = 0; n <= 4; ++n) {
    for (uint32_t x = 0; x < 256; ++x) {
      const EncodeEntry a = plane_code(n, x & 15), b = plane_code(a.n, x >> 4);
      t.encode_pair[n][x] = {static_cast<uint16_t>(a.bits | (b.bits << a.length)),
                             static_cast<uint8_t>(a.length + b.length), b.n};
    }
  }
  for (uint32_t n = 0; n < 4; ++n)
    for (uint32_t x = 0; x < 16; ++x) t.encode[n][x] = plane_code(n, x);
  for (uint32_t n = 0; n <= 4; ++n) {
    for (uint32_t b = 0; b <= kPeekBits; ++b)
      for (uint32_t v = 0; v < (1u << kPeekBits); ++v) t.decode[n][b][v] = plane_decode(n, b, v);
  }
  for (int e = 0; e < 256; ++e) t.decode_scale[e] = std::ldexp(1.f, e - 157);
  return t;
}

}  // namespace cmpi::compress::zfp_fixed_rate::fast
