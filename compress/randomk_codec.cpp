// Sampling without replacement: draw uniform positions into a bitmap,
// skipping repeats, until m = min(k, n - k) are marked; if the complement is
// smaller (k > n/2), mark the n - k dropped positions and invert. With
// m <= n/2 the expected number of draws is below 1.39 m. Scanning the bitmap
// then yields the kept positions in increasing order.
#include "compress/randomk_codec.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "compress/nonfinite.h"

namespace cmpi::compress {

RandomKCodec::RandomKCodec(const CodecSpec& spec)
    : SparseCodec(spec),
      ratio_(sparsifier_ratio(spec)),
      random_(uint64_t(spec.get_int("seed", 0))) {
  spec.require_only({"ratio", "seed"});
}

size_t RandomKCodec::encode_body(const float* in, size_t n, uint8_t* out, size_t, uint16_t&) {
  require_finite(spec(), in, n);
  const size_t k = kept_count_for_ratio(ratio_, n);
  kept_index_.clear();
  kept_value_.clear();
  if (k == 0) return write_kept(n, out);

  const size_t words = (n + 63) / 64;
  chosen_.assign(words, 0);
  const bool mark_dropped = k > n - k;
  const size_t to_mark = mark_dropped ? n - k : k;
  for (size_t marked = 0; marked < to_mark;) {
    const uint64_t i = random_.below(n);
    const uint64_t bit = uint64_t{1} << (i % 64);
    if (chosen_[i / 64] & bit) continue;
    chosen_[i / 64] |= bit;
    ++marked;
  }
  if (mark_dropped) {
    for (auto& word : chosen_) word = ~word;
    if (n % 64) chosen_[words - 1] &= (uint64_t{1} << (n % 64)) - 1;
  }

  const float scale = float(double(n) / double(k));
  kept_index_.reserve(k);
  kept_value_.reserve(k);
  for (size_t w = 0; w < words; ++w) {
    for (uint64_t word = chosen_[w]; word; word &= word - 1) {
      const size_t i = w * 64 + size_t(__builtin_ctzll(word));
      const float value = in[i] * scale;
      if (!std::isfinite(value))
        throw std::invalid_argument("codec " + spec().to_string() + ": input[" + std::to_string(i) +
                                    "] = " + std::to_string(in[i]) +
                                    " times n/k = " + std::to_string(scale) + " overflows float");
      kept_index_.push_back(i);
      kept_value_.push_back(value);
    }
  }
  return write_kept(n, out);
}

std::vector<uint64_t> RandomKCodec::random_state() const {
  return {random_.state()};
}

void RandomKCodec::restore_random_state(const std::vector<uint64_t>& words) {
  if (words.size() != 1)
    throw std::invalid_argument("codec " + spec().to_string() + ": random state of " +
                                std::to_string(words.size()) + " words, expected 1");
  random_.set_state(words[0]);
}

}  // namespace cmpi::compress
