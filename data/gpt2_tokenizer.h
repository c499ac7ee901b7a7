// GPT-2's byte-level BPE encoder (OpenAI's encoder.py): the text is split by
// Gpt2PreTokenizer and each piece is encoded by BytePairEncoder in
// encoder.py's merge order (see byte_pair_encoder.h), which also caches
// pieces.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "data/byte_pair_encoder.h"
#include "data/gpt2_pretokenizer.h"
#include "data/gpt2_vocabulary.h"
#include "data/tokenizer.h"

namespace cmpi::data {

class Gpt2Tokenizer : public Tokenizer {
 public:
  static constexpr size_t kCacheEntries = BytePairEncoder::kCacheEntries;
  static constexpr const char* kEndOfText = "<|endoftext|>";

  // Throws std::runtime_error if the vocabulary has no "<|endoftext|>".
  explicit Gpt2Tokenizer(std::shared_ptr<const Gpt2Vocabulary> vocabulary);

  void encode(std::string_view text, std::vector<int32_t>& out) override;
  std::string decode(const std::vector<int32_t>& ids) const override;
  uint64_t vocab_size() const override { return encoder_.vocabulary().size(); }
  int32_t end_of_document() const override { return end_of_text_; }
  std::unique_ptr<Tokenizer> clone() const override;
  std::string name() const override { return "gpt2"; }

  // The ids of one pre-tokenized piece (BPE only, no splitting).
  void encode_piece(std::string_view piece, std::vector<int32_t>& out) {
    encoder_.encode_piece(piece, out);
  }

 private:
  BytePairEncoder encoder_;
  int32_t end_of_text_;
  Gpt2PreTokenizer pre_tokenizer_;
  std::vector<std::string_view> pieces_;
};

}  // namespace cmpi::data
