// WordStaging: how a block of 16-bit words becomes the float elements a
// codec and the compressed algorithms (comm/algorithms/) work on, a piece at
// a time, so that no full-size float copy of a 16-bit buffer is ever made:
//   widened: one float per word, its exact value (compress/word_type.h);
//     back from floats by rounding to nearest-even;
//   paired:  two words per 32-bit element, bit for bit (a lossless codec on
//     bit patterns, mpc, then compresses the 16-bit words themselves); an
//     odd block's last element carries one word and a zero word of padding.
// `first` and `count` are in elements of the block (words for widened, pairs
// of words for paired).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "compress/word_type.h"

namespace cmpi::comm {

struct WordStaging {
  compress::WordType type = compress::WordType::kBFloat16;
  bool paired = false;

  // Elements a block of `words` words becomes.
  size_t elements(size_t words) const { return paired ? (words + 1) / 2 : words; }

  // out[0..count) = elements [first, first + count) of the block.
  void stage(const uint16_t* block, size_t words, size_t first, size_t count, float* out) const {
    if (!paired) {
      compress::widen_words(block + first, count, type, out);
      return;
    }
    const size_t begin = std::min(words, 2 * first);
    const size_t taken = std::min(words - begin, 2 * count);
    if (taken > 0) std::memcpy(out, block + begin, taken * sizeof(uint16_t));  // out may be null
    if (taken < 2 * count)
      std::memset(reinterpret_cast<uint16_t*>(out) + taken, 0,
                  (2 * count - taken) * sizeof(uint16_t));
  }

  // Elements [first, first + count) of the block = in[0..count).
  void unstage(const float* in, size_t first, size_t count, uint16_t* block, size_t words) const {
    if (!paired) {
      compress::round_words(in, count, type, block + first);
      return;
    }
    const size_t begin = std::min(words, 2 * first);
    const size_t taken = std::min(words - begin, 2 * count);
    std::memcpy(block + begin, in, taken * sizeof(uint16_t));
  }
};

}  // namespace cmpi::comm
