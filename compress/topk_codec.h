// topk: keeps the k = max(1, ceil(ratio * n)) entries of largest magnitude,
// exactly (bit for bit), and zeroes the rest. Biased: pair it with
// ErrorFeedback for gradients. Spec: {name: topk, ratio: 0.01}.
//
// Magnitudes are ranked by the float's bits with the sign cleared, read as an
// unsigned integer: for finite values that is the order of |x|, and NaN and
// infinities rank above every finite value, so they are always kept and
// arrive unchanged (an overflowed gradient stays visible to the receiver).
// Ties at the k-th magnitude are broken by position (lowest first), so
// exactly k entries are kept.
#pragma once

#include <vector>

#include "compress/sparse_codec.h"

namespace cmpi::compress {

class TopKCodec final : public SparseCodec {
 public:
  explicit TopKCodec(const CodecSpec& spec);
  CodecId id() const override { return CodecId::kTopK; }
  double ratio() const { return ratio_; }

 protected:
  size_t max_body_bytes(size_t n) const override {
    return max_sparse_body_bytes(kept_count_for_ratio(ratio_, n), n);
  }
  size_t encode_body(const float* in, size_t n, uint8_t* out, size_t capacity,
                     uint16_t& flags) override;

 private:
  static constexpr size_t kSampleSize = 1 << 14;

  bool select_from_sample(const float* in, size_t n, size_t k);
  void select_exactly(const float* in, size_t n, size_t k);
  void keep_above(const float* in, const uint64_t* idx, size_t count, uint32_t kth,
                  size_t ties_left);

  double ratio_;
  std::vector<uint32_t> magnitude_;  // selection scratch
  std::vector<uint64_t> candidates_;
};

}  // namespace cmpi::compress
