// Pre-tokenize, then BPE piece by piece; decode maps each token's characters
// back to bytes.
#include "data/gpt2_tokenizer.h"

#include <stdexcept>

namespace cmpi::data {

Gpt2Tokenizer::Gpt2Tokenizer(std::shared_ptr<const Gpt2Vocabulary> vocabulary)
    : encoder_(std::move(vocabulary), MergeOrder::kAllOccurrences) {
  const auto eot = encoder_.vocabulary().id(kEndOfText);
  if (!eot) throw std::runtime_error(std::string("GPT-2 vocabulary has no ") + kEndOfText);
  end_of_text_ = *eot;
}

std::unique_ptr<Tokenizer> Gpt2Tokenizer::clone() const {
  return std::make_unique<Gpt2Tokenizer>(encoder_.shared_vocabulary());
}

void Gpt2Tokenizer::encode(std::string_view text, std::vector<int32_t>& out) {
  pieces_.clear();
  pre_tokenizer_.split(text, pieces_);
  for (const std::string_view piece : pieces_) encoder_.encode_piece(piece, out);
}

std::string Gpt2Tokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  for (const int32_t id : ids) {
    if (id == end_of_text_) continue;
    try {
      encoder_.append_token_bytes(id, out);
    } catch (const std::out_of_range& e) {
      throw std::out_of_range(std::string("gpt2 tokenizer: ") + e.what());
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(std::string("gpt2 tokenizer: ") + e.what());
    }
  }
  return out;
}

}  // namespace cmpi::data
