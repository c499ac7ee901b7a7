// qsgd: stochastic quantization to s levels (Alistarh, Grubic, Li, Tomioka,
// Vojnovic, "QSGD: Communication-Efficient SGD via Gradient Quantization and
// Encoding", NeurIPS 2017), bit-packed.
//
// The array is cut into buckets of `bucket` values (0 = one bucket, the
// paper's plain form). For a bucket with scale N, each value becomes
//   sign(x) * N/s * l,  l = floor(r) + [u < r - floor(r)],  r = |x| s / N,
// with u uniform in [0, 1): rounding up with probability equal to the
// fraction makes E[l] = r, so the decoded value is an unbiased estimate of x.
// Its variance is at most (N/s)^2 / 4 per value.
//   norm: l2   N = ||bucket||_2, the paper's choice (default).
//   norm: max  N = max |x| in the bucket ("QSGDinf"): a far finer step for
//              the same bits (N/s instead of ||x||_2/s), still unbiased.
// Small buckets cut the error: with norm l2 and Gaussian data the relative
// RMSE is about sqrt(bucket / (6 s^2)), so bucket 512 at s = 127 gives ~7%,
// bucket 128 ~3.6%, and norm max with bucket 512 ~1.1% (measured on N(0,1)).
// The 4x setting is levels 127 (8-bit codes) with norm max, or norm l2 with
// bucket <= 128: both stay under 5% relative RMSE.
// Senders whose results are summed (data-parallel ranks) should use
// different seeds, or their rounding errors are correlated and do not
// average out.
//
// Spec: {name: qsgd, levels: 16, bucket: 512, norm: l2, seed: 0}, levels in
// [1, 65535] (float rounding of r stays below 2^-8 of a level).
// Body: bucket_count float32 scales N, then the codes l*sign + s in [0, 2s]
// packed at ceil(log2(2s + 1)) bits each (6 bits for s = 16, 8 for s = 127).
// The header echoes levels and bucket (the decoder needs both).
// Non-finite input is refused (std::invalid_argument naming the index): a
// bucket scale cannot represent it.
#pragma once

#include "compress/codec.h"
#include "compress/random_blocks.h"

namespace cmpi::compress {

class QsgdCodec final : public Codec {
 public:
  explicit QsgdCodec(const CodecSpec& spec);
  CodecId id() const override { return CodecId::kQsgd; }
  bool lossless() const override { return false; }
  std::vector<uint64_t> random_state() const override;
  void restore_random_state(const std::vector<uint64_t>& words) override;
  uint32_t levels() const { return levels_; }
  size_t bucket() const { return bucket_; }
  unsigned code_bits() const { return code_bits_; }

 protected:
  size_t max_body_bytes(size_t n) const override;
  std::array<uint32_t, 4> header_params() const override {
    return {levels_, uint32_t(bucket_), 0, 0};
  }
  size_t encode_body(const float* in, size_t n, uint8_t* out, size_t capacity,
                     uint16_t& flags) override;
  void decode_body(const uint8_t* in, size_t size, float* out, size_t n,
                   uint16_t flags) const override;

 private:
  uint32_t levels_;
  size_t bucket_;
  bool max_norm_;
  unsigned code_bits_;
  RandomBlocks random_;
};

}  // namespace cmpi::compress
