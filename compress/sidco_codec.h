// sidco: threshold sparsification at a target density without sorting
// (Abdelmoniem et al., "An Efficient Statistical-based Gradient Compression
// Technique for Distributed Training Systems", MLSys 2021). Gradient
// magnitudes follow sparsity-inducing distributions, so the magnitude that
// only a fraction `density` of the entries exceed can be read off a fitted
// distribution instead of found by selection:
//   stage 1   fit an exponential to |g|: eta_1 = mean|g| * ln(1/d);
//   stage s   fit `fit` to the excesses |g| - eta_(s-1) of the entries
//             above eta_(s-1) only: eta_s = eta_(s-1) + t with P(excess > t)
//             = d under the fit (tail_fit.h);
// with d = density^(1/stages) per stage, so that the stages multiply to the
// target. Refining on the tail corrects the first fit where the real tail is
// heavier or lighter than exponential. Every entry with |g| >= eta_stages is
// then kept, exactly, in one pass, and written as the shared sparse body
// (sparse_body.h), so any sparsifier's decoder reads it. The kept count
// follows the data (density is a target, not a guarantee):
// last_density() reports what the last encode achieved.
//
// The fits need only moments, so they run on an evenly strided sample of
// max(sample, kFinalTailSamples / density) entries (sample 0: all of them),
// enough for ~1000 sampled entries above the final threshold, and encoding
// costs little more than one read of the input.
// A stage runs only while the sample holds enough entries above the previous
// threshold to fit (kMinTailSamples); otherwise the remaining stages' density
// goes to the last stage that can be fitted.
//
// Spec: {name: sidco, density: 0.01, stages: 2, fit: gpareto, sample: 65536}
// (density in (0, 1], stages 1..8, fit exponential | gpareto | gamma).
// Biased like topk: pair it with ErrorFeedback for gradients. Zeros are never
// kept; NaN and infinities always are (they rank above every finite
// threshold) and are left out of the fits.
#pragma once

#include <vector>

#include "compress/sparse_codec.h"
#include "compress/tail_fit.h"

namespace cmpi::compress {

class SidcoCodec final : public SparseCodec {
 public:
  static constexpr size_t kMinTailSamples = 64;
  static constexpr size_t kFinalTailSamples = 1024;

  explicit SidcoCodec(const CodecSpec& spec);
  CodecId id() const override { return CodecId::kSidco; }
  double density() const { return density_; }
  int stages() const { return stages_; }
  TailFit fit() const { return fit_; }
  // Kept entries / n of the last encode (0 before any, or for n = 0).
  double last_density() const { return last_density_; }
  // The magnitude threshold the last encode estimated.
  float last_threshold() const { return last_threshold_; }

  // The threshold estimate alone (what encode keeps is |x| >= it).
  float estimate_threshold(const float* in, size_t n);

 protected:
  size_t max_body_bytes(size_t n) const override { return max_sparse_body_bytes(n, n); }
  size_t encode_body(const float* in, size_t n, uint8_t* out, size_t capacity,
                     uint16_t& flags) override;

 private:
  void gather_sample(const float* in, size_t n);
  void keep_if_at_least(const float* in, size_t i, uint32_t limit);

  double density_;
  int stages_;
  TailFit fit_;
  size_t sample_size_;
  double last_density_ = 0;
  float last_threshold_ = 0;
  std::vector<float> sample_;  // finite magnitudes, reused between encodes
};

}  // namespace cmpi::compress
