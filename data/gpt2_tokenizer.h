// GPT-2's byte-level BPE encoder (OpenAI's encoder.py): the text is split by
// Gpt2PreTokenizer, each piece's bytes become their single-byte tokens, and
// then, repeatedly, the adjacent pair with the lowest merge rank is merged
// everywhere it occurs (left to right, non-overlapping) until no adjacent
// pair is a merge. Results are cached per piece, since natural text repeats
// its words; the cache is cleared when it reaches kCacheEntries so memory
// stays bounded on large corpora.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "data/gpt2_pretokenizer.h"
#include "data/gpt2_vocabulary.h"
#include "data/tokenizer.h"

namespace cmpi::data {

class Gpt2Tokenizer : public Tokenizer {
 public:
  static constexpr size_t kCacheEntries = size_t(1) << 18;
  static constexpr const char* kEndOfText = "<|endoftext|>";

  // Throws std::runtime_error if the vocabulary has no "<|endoftext|>".
  explicit Gpt2Tokenizer(std::shared_ptr<const Gpt2Vocabulary> vocabulary);

  void encode(std::string_view text, std::vector<int32_t>& out) override;
  std::string decode(const std::vector<int32_t>& ids) const override;
  uint64_t vocab_size() const override { return vocabulary_->size(); }
  int32_t end_of_document() const override { return end_of_text_; }
  std::unique_ptr<Tokenizer> clone() const override;
  std::string name() const override { return "gpt2"; }

  // The ids of one pre-tokenized piece (BPE only, no splitting).
  void encode_piece(std::string_view piece, std::vector<int32_t>& out);

 private:
  void merge_pairs(std::vector<int32_t>& symbols) const;

  std::shared_ptr<const Gpt2Vocabulary> vocabulary_;
  int32_t end_of_text_;
  Gpt2PreTokenizer pre_tokenizer_;
  std::vector<std::string_view> pieces_;
  std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

}  // namespace cmpi::data
