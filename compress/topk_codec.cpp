// Selection works on integer magnitude keys (float bits without the sign):
// std::nth_element finds the k-th largest key in linear expected time, a
// counting pass finds how many keys lie strictly above it, and a final pass
// in position order keeps those plus just enough ties to reach k, yielding
// positions already sorted for the index coder.
#include "compress/topk_codec.h"

#include <algorithm>
#include <cstring>
#include <functional>

namespace cmpi::compress {
namespace {

uint32_t magnitude_key(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  return bits & 0x7fffffffu;
}

}  // namespace

TopKCodec::TopKCodec(const CodecSpec& spec) : SparseCodec(spec) {
  spec.require_only({"ratio"});
  ratio_ = sparsifier_ratio(spec);
}

size_t TopKCodec::encode_body(const float* in, size_t n, uint8_t* out, size_t, uint16_t&) {
  const size_t k = kept_count_for_ratio(ratio_, n);
  kept_index_.clear();
  kept_value_.clear();
  if (k == 0) return write_kept(n, out);

  magnitude_.resize(n);
  for (size_t i = 0; i < n; ++i) magnitude_[i] = magnitude_key(in[i]);
  std::nth_element(magnitude_.begin(), magnitude_.begin() + (k - 1), magnitude_.end(),
                   std::greater<uint32_t>());
  const uint32_t kth = magnitude_[k - 1];

  size_t above = 0;
  for (size_t i = 0; i < n; ++i) above += magnitude_key(in[i]) > kth;
  size_t ties_left = k - above;

  kept_index_.reserve(k);
  kept_value_.reserve(k);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t key = magnitude_key(in[i]);
    if (key > kth || (key == kth && ties_left > 0)) {
      if (key == kth) --ties_left;
      kept_index_.push_back(i);
      kept_value_.push_back(in[i]);
    }
  }
  return write_kept(n, out);
}

}  // namespace cmpi::compress
