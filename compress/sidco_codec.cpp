// The sample holds magnitudes; each stage computes the mean and variance of
// the excesses of the entries above the previous threshold, then compacts the
// sample to the entries above the new one, so later stages touch only the
// shrinking tail. The final pass over the input compares magnitude keys
// (float bits without the sign, as integers) like the threshold codec.
#include "compress/sidco_codec.h"

#include <algorithm>
#include <cmath>

namespace cmpi::compress {
namespace {

constexpr int kMaxStages = 8;
constexpr size_t kDefaultSample = size_t(1) << 16;

struct Moments {
  double mean = 0, variance = 0;
};

// Mean and (population) variance of v - offset over v[0..count).
Moments excess_moments(const float* v, size_t count, double offset) {
  double sum = 0, sum_sq = 0;
  for (size_t i = 0; i < count; ++i) {
    const double y = double(v[i]) - offset;
    sum += y;
    sum_sq += y * y;
  }
  Moments m;
  if (count == 0) return m;
  m.mean = sum / double(count);
  m.variance = std::max(0.0, sum_sq / double(count) - m.mean * m.mean);
  return m;
}

}  // namespace

SidcoCodec::SidcoCodec(const CodecSpec& spec) : SparseCodec(spec) {
  spec.require_only({"density", "stages", "fit", "sample"});
  density_ = spec.get_double("density", 0.01);
  if (!(density_ > 0 && density_ <= 1))
    throw CodecError("codec 'sidco': parameter 'density' must be in (0, 1], got " +
                     spec.get_string("density", ""));
  const int64_t stages = spec.get_int("stages", 2);
  if (stages < 1 || stages > kMaxStages)
    throw CodecError("codec 'sidco': parameter 'stages' must be in 1.." +
                     std::to_string(kMaxStages) + ", got " + spec.get_string("stages", ""));
  stages_ = int(stages);
  try {
    fit_ = parse_tail_fit(spec.get_string("fit", "gpareto"));
  } catch (const std::invalid_argument& e) {
    throw CodecError(std::string("codec 'sidco': parameter 'fit': ") + e.what());
  }
  const int64_t sample = spec.get_int("sample", int64_t(kDefaultSample));
  if (sample < 0 || (sample > 0 && sample < int64_t(kMinTailSamples)))
    throw CodecError("codec 'sidco': parameter 'sample' must be 0 (all entries) or >= " +
                     std::to_string(kMinTailSamples) + ", got " + spec.get_string("sample", ""));
  sample_size_ = size_t(sample);
}

void SidcoCodec::gather_sample(const float* in, size_t n) {
  sample_.clear();
  // At least kFinalTailSamples entries of the sample should lie above the
  // final threshold: the estimate of a quantile from m exceedances is off by
  // about 1/sqrt(m), so a small target density needs a larger sample.
  const size_t wanted =
      std::max(sample_size_, size_t(std::ceil(double(kFinalTailSamples) / density_)));
  const size_t count = sample_size_ == 0 || n <= wanted ? n : wanted;
  sample_.reserve(count);
  // Evenly spread positions (the middle of each of `count` equal strata),
  // so that every part of the buffer -- every layer of a gradient bucket --
  // is represented in proportion.
  for (size_t s = 0; s < count; ++s) {
    const size_t i = count == n ? s : size_t((2 * uint64_t(s) + 1) * n / (2 * uint64_t(count)));
    const float magnitude = std::fabs(in[i]);
    if (std::isfinite(magnitude)) sample_.push_back(magnitude);
  }
}

float SidcoCodec::estimate_threshold(const float* in, size_t n) {
  gather_sample(in, n);
  // Each stage leaves about a fraction d of the sample; run only the stages
  // whose input still holds kMinTailSamples entries.
  int stages = 1;
  while (stages < stages_ &&
         double(sample_.size()) * std::pow(density_, double(stages) / stages_) >=
             double(kMinTailSamples))
    ++stages;

  double threshold = 0;
  const double total = double(sample_.size());
  size_t tail = sample_.size();
  for (int s = 0; s < stages && tail > 0; ++s) {
    // The density still to go, relative to the entries above the current
    // threshold, shared evenly by the stages left. Counting what the
    // previous stages actually left (rather than assuming each hit its
    // share) lets every stage correct its predecessors' misfit: after an
    // exponential first stage on a lighter-than-exponential tail, say, the
    // next stage aims at a larger fraction of a tail that came out small.
    const double remaining = std::min(1.0, density_ * total / double(tail));
    const double stage_density = std::pow(remaining, 1.0 / double(stages - s));
    const TailFit fit = s == 0 ? TailFit::kExponential : fit_;
    const Moments m = excess_moments(sample_.data(), tail, threshold);
    threshold += tail_quantile(fit, m.mean, m.variance, stage_density);
    const float cut = float(threshold);
    tail = size_t(std::remove_if(sample_.begin(), sample_.begin() + std::ptrdiff_t(tail),
                                 [cut](float v) { return !(v > cut); }) -
                  sample_.begin());
  }
  return float(threshold);
}

void SidcoCodec::keep_if_at_least(const float* in, size_t i, uint32_t limit) {
  if (magnitude_key(in[i]) < limit) return;
  kept_index_.push_back(i);
  kept_value_.push_back(in[i]);
}

size_t SidcoCodec::encode_body(const float* in, size_t n, uint8_t* out, size_t, uint16_t&) {
  kept_index_.clear();
  kept_value_.clear();
  last_threshold_ = n ? estimate_threshold(in, n) : 0.f;
  // Zeros are never worth sending: the smallest key kept is the smallest
  // positive magnitude.
  const uint32_t limit = std::max<uint32_t>(1, magnitude_key(last_threshold_));
  const size_t expected = size_t(1.5 * density_ * double(n)) + 16;
  kept_index_.reserve(std::min(n, expected));
  kept_value_.reserve(std::min(n, expected));
  // Most groups of kGroup entries hold nothing to keep at the densities
  // sidco is for: a branch-free (vectorizable) test per group skips them.
  constexpr size_t kGroup = 16;
  size_t i = 0;
  for (; i + kGroup <= n; i += kGroup) {
    uint32_t any = 0;
    for (size_t j = 0; j < kGroup; ++j) any |= uint32_t(magnitude_key(in[i + j]) >= limit);
    if (!any) continue;
    for (size_t j = i; j < i + kGroup; ++j) keep_if_at_least(in, j, limit);
  }
  for (; i < n; ++i) keep_if_at_least(in, i, limit);
  last_density_ = n ? double(kept_index_.size()) / double(n) : 0.0;
  return write_kept(n, out);
}

}  // namespace cmpi::compress
