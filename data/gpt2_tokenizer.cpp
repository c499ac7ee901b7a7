// The merge loop mirrors encoder.py's bpe(): find the lowest-ranked adjacent
// pair, rewrite the word merging each occurrence of exactly that pair, and
// repeat. Pieces are short (a word and its leading space), so the quadratic
// scan is cheaper than a priority queue.
#include "data/gpt2_tokenizer.h"

#include <limits>
#include <stdexcept>

#include "data/utf8.h"

namespace cmpi::data {

Gpt2Tokenizer::Gpt2Tokenizer(std::shared_ptr<const Gpt2Vocabulary> vocabulary)
    : vocabulary_(std::move(vocabulary)) {
  const auto eot = vocabulary_->id(kEndOfText);
  if (!eot) throw std::runtime_error(std::string("GPT-2 vocabulary has no ") + kEndOfText);
  end_of_text_ = *eot;
}

std::unique_ptr<Tokenizer> Gpt2Tokenizer::clone() const {
  return std::make_unique<Gpt2Tokenizer>(vocabulary_);
}

void Gpt2Tokenizer::encode(std::string_view text, std::vector<int32_t>& out) {
  pieces_.clear();
  pre_tokenizer_.split(text, pieces_);
  for (const std::string_view piece : pieces_) encode_piece(piece, out);
}

void Gpt2Tokenizer::encode_piece(std::string_view piece, std::vector<int32_t>& out) {
  const std::string key(piece);
  const auto cached = cache_.find(key);
  if (cached != cache_.end()) {
    out.insert(out.end(), cached->second.begin(), cached->second.end());
    return;
  }
  std::vector<int32_t> symbols;
  symbols.reserve(piece.size());
  for (const char c : piece) symbols.push_back(vocabulary_->byte_id(uint8_t(c)));
  merge_pairs(symbols);
  out.insert(out.end(), symbols.begin(), symbols.end());
  if (cache_.size() >= kCacheEntries) cache_.clear();
  cache_.emplace(key, std::move(symbols));
}

void Gpt2Tokenizer::merge_pairs(std::vector<int32_t>& symbols) const {
  std::vector<int32_t> merged;
  while (symbols.size() > 1) {
    const Gpt2Merge* best = nullptr;
    int32_t best_left = 0, best_right = 0;
    for (size_t i = 0; i + 1 < symbols.size(); ++i) {
      const Gpt2Merge* m = vocabulary_->merge(symbols[i], symbols[i + 1]);
      if (m && (!best || m->rank < best->rank)) {
        best = m;
        best_left = symbols[i];
        best_right = symbols[i + 1];
      }
    }
    if (!best) return;
    merged.clear();
    for (size_t i = 0; i < symbols.size();) {
      if (i + 1 < symbols.size() && symbols[i] == best_left && symbols[i + 1] == best_right) {
        merged.push_back(best->merged_id);
        i += 2;
      } else {
        merged.push_back(symbols[i]);
        i += 1;
      }
    }
    symbols.swap(merged);
  }
}

std::string Gpt2Tokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  for (const int32_t id : ids) {
    if (id == end_of_text_) continue;
    if (id < 0 || uint64_t(id) >= vocabulary_->size()) {
      throw std::out_of_range("gpt2 tokenizer: id " + std::to_string(id) + " not in vocabulary");
    }
    const std::string& token = vocabulary_->token(id);
    for (size_t at = 0; at < token.size();) {
      const DecodedCodePoint d = decode_utf8(token, at);
      const auto byte = vocabulary_->byte_map().byte(d.code_point);
      if (!byte)
        throw std::runtime_error("gpt2 tokenizer: token " + std::to_string(id) +
                                 " holds a character outside the byte map");
      out += char(*byte);
      at += d.length;
    }
  }
  return out;
}

}  // namespace cmpi::data
