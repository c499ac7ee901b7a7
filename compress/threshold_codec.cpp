// One pass in position order compares magnitude keys (float bits without the
// sign, as integers), which orders finite magnitudes like |x| and puts NaN
// and infinities above every finite threshold.
#include "compress/threshold_codec.h"

#include <cmath>

namespace cmpi::compress {
ThresholdCodec::ThresholdCodec(const CodecSpec& spec) : SparseCodec(spec) {
  spec.require_only({"threshold"});
  if (!spec.has("threshold"))
    throw CodecError("codec 'threshold': parameter 'threshold' is required");
  const double t = spec.get_double("threshold", 0);
  if (!(t >= 0) || !std::isfinite(float(t)))
    throw CodecError("codec 'threshold': parameter 'threshold' must be finite and >= 0, got " +
                     spec.get_string("threshold", ""));
  threshold_ = float(t);
}

size_t ThresholdCodec::encode_body(const float* in, size_t n, uint8_t* out, size_t, uint16_t&) {
  kept_index_.clear();
  kept_value_.clear();
  const uint32_t limit = magnitude_key(threshold_);
  for (size_t i = 0; i < n; ++i) {
    if (magnitude_key(in[i]) >= limit) {
      kept_index_.push_back(i);
      kept_value_.push_back(in[i]);
    }
  }
  return write_kept(n, out);
}

}  // namespace cmpi::compress
