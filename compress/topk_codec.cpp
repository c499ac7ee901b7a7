// Selection works on integer magnitude keys (float bits without the sign):
// std::nth_element finds the k-th largest key in linear expected time, a
// counting pass finds how many keys lie strictly above it, and a final pass
// in position order keeps those plus just enough ties to reach k, yielding
// positions already sorted for the index coder.
// For large n and small k a strided sample of kSampleSize keys first gives a
// floor a little below the k-th largest; one pass collects the candidates at
// or above it (a few k of them) and the exact selection runs on those only.
// The result is the same either way: all entries above the floor include the
// true top k, and if the sample was unlucky (fewer than k candidates) the
// exact path over all n runs instead.
#include "compress/topk_codec.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace cmpi::compress {
TopKCodec::TopKCodec(const CodecSpec& spec) : SparseCodec(spec) {
  spec.require_only({"ratio"});
  ratio_ = sparsifier_ratio(spec);
}

size_t TopKCodec::encode_body(const float* in, size_t n, uint8_t* out, size_t, uint16_t&) {
  const size_t k = kept_count_for_ratio(ratio_, n);
  kept_index_.clear();
  kept_value_.clear();
  if (k == 0) return write_kept(n, out);
  if (!select_from_sample(in, n, k)) select_exactly(in, n, k);
  return write_kept(n, out);
}

// Keeps the entries above `kth` plus the first `ties_left` equal to it, in
// position order, from the positions idx[0..count) (or all if idx is null).
void TopKCodec::keep_above(const float* in, const uint64_t* idx, size_t count, uint32_t kth,
                           size_t ties_left) {
  for (size_t j = 0; j < count; ++j) {
    const size_t i = idx ? idx[j] : j;
    const uint32_t key = magnitude_key(in[i]);
    if (key > kth || (key == kth && ties_left > 0)) {
      if (key == kth) --ties_left;
      kept_index_.push_back(i);
      kept_value_.push_back(in[i]);
    }
  }
}

void TopKCodec::select_exactly(const float* in, size_t n, size_t k) {
  magnitude_.resize(n);
  for (size_t i = 0; i < n; ++i) magnitude_[i] = magnitude_key(in[i]);
  std::nth_element(magnitude_.begin(), magnitude_.begin() + (k - 1), magnitude_.end(),
                   std::greater<uint32_t>());
  const uint32_t kth = magnitude_[k - 1];
  size_t above = 0;
  for (size_t i = 0; i < n; ++i) above += magnitude_key(in[i]) > kth;
  kept_index_.reserve(k);
  kept_value_.reserve(k);
  keep_above(in, nullptr, n, kth, k - above);
}

bool TopKCodec::select_from_sample(const float* in, size_t n, size_t k) {
  if (n < 8 * kSampleSize || k > n / 8) return false;
  const size_t stride = n / kSampleSize;
  magnitude_.resize(kSampleSize);
  for (size_t s = 0; s < kSampleSize; ++s)
    magnitude_[s] = magnitude_key(in[s * stride + stride / 2]);
  // The sample rank matching k, lowered by a margin of several standard
  // deviations of its binomial count, so that w.h.p. >= k entries pass.
  const double expected = double(k) * double(kSampleSize) / double(n);
  const size_t rank = size_t(1.25 * expected + 4 * std::sqrt(expected) + 16);
  if (rank >= kSampleSize) return false;
  std::nth_element(magnitude_.begin(), magnitude_.begin() + rank, magnitude_.end(),
                   std::greater<uint32_t>());
  const uint32_t floor_key = magnitude_[rank];

  candidates_.clear();
  for (size_t i = 0; i < n; ++i)
    if (magnitude_key(in[i]) >= floor_key) candidates_.push_back(i);
  if (candidates_.size() < k) return false;  // unlucky sample: fall back

  magnitude_.resize(candidates_.size());
  for (size_t j = 0; j < candidates_.size(); ++j) magnitude_[j] = magnitude_key(in[candidates_[j]]);
  std::nth_element(magnitude_.begin(), magnitude_.begin() + (k - 1), magnitude_.end(),
                   std::greater<uint32_t>());
  const uint32_t kth = magnitude_[k - 1];
  size_t above = 0;
  for (uint64_t i : candidates_) above += magnitude_key(in[i]) > kth;
  kept_index_.reserve(k);
  kept_value_.reserve(k);
  keep_above(in, candidates_.data(), candidates_.size(), kth, k - above);
  return true;
}

}  // namespace cmpi::compress
