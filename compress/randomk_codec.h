// randomk: keeps k = max(1, ceil(ratio * n)) positions drawn uniformly at
// random without replacement and sends x_i * n / k for each. Every position
// is kept with probability k / n, so E[decoded_i] = (k/n) (n/k) x_i = x_i:
// the estimate is unbiased (variance x_i^2 (n/k - 1)).
// Spec: {name: randomk, ratio: 0.01, seed: S} (seed default 0). The codec's
// random stream advances with every encode; encoders built from the same
// spec draw the same positions call for call, which lets ranks agree on a
// common support if they share a seed.
// Non-finite input is refused (std::invalid_argument naming the index): a
// sample cannot carry a NaN or infinity it did not draw. Likewise a kept
// value whose rescaling overflows float.
#pragma once

#include <vector>

#include "compress/random_stream.h"
#include "compress/sparse_codec.h"

namespace cmpi::compress {

class RandomKCodec final : public SparseCodec {
 public:
  explicit RandomKCodec(const CodecSpec& spec);
  CodecId id() const override { return CodecId::kRandomK; }
  double ratio() const { return ratio_; }
  std::vector<uint64_t> random_state() const override;
  void restore_random_state(const std::vector<uint64_t>& words) override;

 protected:
  size_t max_body_bytes(size_t n) const override {
    return max_sparse_body_bytes(kept_count_for_ratio(ratio_, n), n);
  }
  size_t encode_body(const float* in, size_t n, uint8_t* out, size_t capacity,
                     uint16_t& flags) override;

 private:
  double ratio_;
  RandomStream random_;
  std::vector<uint64_t> chosen_;  // bitmap of drawn positions
};

}  // namespace cmpi::compress
