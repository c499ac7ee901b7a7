// threshold: keeps every entry with |x| >= T, exactly, and zeroes the rest;
// the kept count follows the data (0 to n). Biased: pair it with
// ErrorFeedback for gradients. Spec: {name: threshold, threshold: T}, T
// finite and >= 0 (required; T = 0 keeps everything).
// NaN and infinities count as larger than any T: they are kept and arrive
// unchanged, as with topk.
#pragma once

#include "compress/sparse_codec.h"

namespace cmpi::compress {

class ThresholdCodec final : public SparseCodec {
 public:
  explicit ThresholdCodec(const CodecSpec& spec);
  CodecId id() const override { return CodecId::kThreshold; }
  float threshold() const { return threshold_; }

 protected:
  size_t max_body_bytes(size_t n) const override { return max_sparse_body_bytes(n, n); }
  size_t encode_body(const float* in, size_t n, uint8_t* out, size_t capacity,
                     uint16_t& flags) override;

 private:
  float threshold_;
};

}  // namespace cmpi::compress
