// RandomStream: random 64-bit words for randomk's index draws and for
// seeding RandomBlocks (qsgd, natural). SplitMix64 (Steele, Lea, Flood 2014): a 64-bit counter
// advanced by the golden-ratio constant and passed through a bijective mixer. It is cheap (two
// multiplies per 64 bits), passes BigCrush, and any 64-bit seed gives a full-period stream, which
// is all stochastic rounding and index sampling need. Each codec owns one stream; its state
// advances with every encode, so repeated encodings of the same data draw fresh randomness.
#pragma once

#include <cstdint>

#include "compress/splitmix64.h"

namespace cmpi::compress {

class RandomStream {
 public:
  explicit RandomStream(uint64_t seed) : state_(seed) {}

  // The whole state (checkpoints save it so a resumed run draws what the
  // uninterrupted one would).
  uint64_t state() const { return state_; }
  void set_state(uint64_t state) { state_ = state; }

  uint64_t next() {
    state_ += kSplitMix64Gamma;
    return splitmix64_mix(state_);
  }

  // Uniform integer in [0, bound), bound > 0, without modulo bias: Lemire's
  // multiply-shift, redrawing the rare values that would favour low results.
  uint64_t below(uint64_t bound) {
    __extension__ using Wide = unsigned __int128;
    Wide product = Wide(next()) * bound;
    uint64_t low = uint64_t(product);
    if (low < bound) {
      const uint64_t threshold = (0 - bound) % bound;
      while (low < threshold) {
        product = Wide(next()) * bound;
        low = uint64_t(product);
      }
    }
    return uint64_t(product >> 64);
  }

 private:
  uint64_t state_;
};

}  // namespace cmpi::compress
