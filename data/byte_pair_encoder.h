// Byte-level BPE on one pre-tokenized piece, as GPT-2's encoder.py and the
// BPE model of Hugging Face tokenizers define it: the piece's bytes become
// their single-byte tokens, then, repeatedly, the adjacent pair with the
// lowest merge rank is merged until no adjacent pair is a merge. The two
// definitions differ in one detail, chosen by MergeOrder: encoder.py merges
// every occurrence of the best pair in one step (left to right,
// non-overlapping); Hugging Face merges only its leftmost occurrence and
// then looks again, so a pair that the merge created and that ranks lower
// goes first. Both agree whenever every merge ranks after the merges that
// made its two parts, which holds for merge lists written in training
// order (GPT-2's, GPT-NeoX's). With ignore_merges
// (a tokenizer.json option), a piece that is itself a vocabulary entry is
// that one token without merging. Results are cached per piece, bounded
// (data/piece_cache.h). Not thread-safe (the cache); copies share the
// vocabulary.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "data/gpt2_vocabulary.h"
#include "data/piece_cache.h"

namespace cmpi::data {

enum class MergeOrder {
  kAllOccurrences,  // GPT-2's encoder.py
  kLeftmostFirst,   // Hugging Face tokenizers
};

// The merge loop on its own: merges adjacent `symbols` (token ids) by the
// vocabulary's merge ranks in `order` until no adjacent pair is a merge.
// Shared with CharPairEncoder, whose initial symbols are characters.
void merge_symbols(const Gpt2Vocabulary& vocabulary, MergeOrder order,
                   std::vector<int32_t>& symbols);

class BytePairEncoder {
 public:
  static constexpr size_t kCacheEntries = PieceCache::kEntries;

  BytePairEncoder(std::shared_ptr<const Gpt2Vocabulary> vocabulary, MergeOrder order,
                  bool ignore_merges = false);

  // Appends the ids of `piece` (any bytes) to `out`.
  void encode_piece(std::string_view piece, std::vector<int32_t>& out);
  // Appends the bytes token `id` stands for; throws std::out_of_range for
  // an id outside the vocabulary, std::runtime_error for a token that is
  // not spelled with the byte map.
  void append_token_bytes(int32_t id, std::string& out) const;

  const Gpt2Vocabulary& vocabulary() const { return *vocabulary_; }
  const std::shared_ptr<const Gpt2Vocabulary>& shared_vocabulary() const { return vocabulary_; }

 private:
  std::shared_ptr<const Gpt2Vocabulary> vocabulary_;
  MergeOrder order_;
  bool ignore_merges_;
  PieceCache cache_;
  std::string spelled_;  // a piece spelled with the byte map (ignore_merges)
};

}  // namespace cmpi::data
