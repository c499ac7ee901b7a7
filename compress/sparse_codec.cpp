// Parameter helpers shared by the ratio-based sparsifiers.
#include "compress/sparse_codec.h"

#include <cmath>
#include <string>

namespace cmpi::compress {

size_t kept_count_for_ratio(double ratio, size_t n) {
  if (n == 0) return 0;
  const double k = std::ceil(ratio * double(n));
  if (k <= 1) return 1;
  return k >= double(n) ? n : size_t(k);
}

double sparsifier_ratio(const CodecSpec& spec) {
  const double ratio = spec.get_double("ratio", 0.01);
  if (!(ratio > 0 && ratio <= 1))
    throw CodecError("codec '" + spec.name() + "': parameter 'ratio' must be in (0, 1], got " +
                     spec.get_string("ratio", ""));
  return ratio;
}

}  // namespace cmpi::compress
