// The scan ORs a per-element "exponent all ones" flag over blocks, a
// branch-free loop the compiler vectorises, and only looks for the exact
// index inside a block that has a hit.
#include "compress/nonfinite.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace cmpi::compress {

size_t first_nonfinite(const float* x, size_t n) {
  constexpr size_t kBlock = 256;
  constexpr uint32_t kExponent = 0x7f800000u;
  for (size_t start = 0; start < n; start += kBlock) {
    const size_t end = n - start < kBlock ? n : start + kBlock;
    uint32_t hit = 0;
    for (size_t i = start; i < end; ++i) {
      uint32_t bits;
      std::memcpy(&bits, x + i, 4);
      hit |= uint32_t((bits & kExponent) == kExponent);
    }
    if (hit)
      for (size_t i = start; i < end; ++i)
        if (!std::isfinite(x[i])) return i;
  }
  return n;
}

void require_finite(const CodecSpec& spec, const float* x, size_t n) {
  const size_t bad = first_nonfinite(x, n);
  if (bad == n) return;
  throw std::invalid_argument("codec " + spec.to_string() + ": input[" + std::to_string(bad) +
                              "] = " + std::to_string(x[bad]) +
                              " is not finite; this codec encodes finite values only");
}

}  // namespace cmpi::compress
