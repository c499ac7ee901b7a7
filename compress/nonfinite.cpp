// The scan tests blocks with a branch-free kernel (quantize_kernels) and
// only looks for the exact index inside a block that has a hit.
#include "compress/nonfinite.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "compress/quantize_kernels.h"

namespace cmpi::compress {

size_t first_nonfinite(const float* x, size_t n) {
  constexpr size_t kBlock = 256;
  for (size_t start = 0; start < n; start += kBlock) {
    const size_t end = n - start < kBlock ? n : start + kBlock;
    if (kernels::any_nonfinite(x + start, end - start))
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
