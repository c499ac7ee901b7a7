// kAllOccurrences mirrors encoder.py's bpe(): find the lowest-ranked
// adjacent pair (the leftmost among equals), rewrite the word merging each
// occurrence of exactly that pair, and repeat; pieces are short (a word and
// its leading space), so the quadratic scan is cheap. kLeftmostFirst runs
// Hugging Face's own queue (merge_by_queue), which stays cheap on the long
// pieces of a tokenizer.json that does not split its text.
#include "data/byte_pair_encoder.h"

#include <stdexcept>

#include "data/bpe_merge_queue.h"
#include "data/utf8.h"

namespace cmpi::data {

BytePairEncoder::BytePairEncoder(std::shared_ptr<const Gpt2Vocabulary> vocabulary, MergeOrder order,
                                 bool ignore_merges)
    : vocabulary_(std::move(vocabulary)), order_(order), ignore_merges_(ignore_merges) {}

void BytePairEncoder::encode_piece(std::string_view piece, std::vector<int32_t>& out) {
  std::string key(piece);
  if (cache_.append(key, out)) return;
  std::vector<int32_t> symbols;
  if (ignore_merges_) {
    spelled_.clear();
    for (const char c : piece) spelled_ += vocabulary_->byte_map().utf8(uint8_t(c));
    if (const auto whole = vocabulary_->id(spelled_)) symbols.push_back(*whole);
  }
  if (symbols.empty()) {
    symbols.reserve(piece.size());
    for (const char c : piece) symbols.push_back(vocabulary_->byte_id(uint8_t(c)));
    merge_symbols(*vocabulary_, order_, symbols);
  }
  out.insert(out.end(), symbols.begin(), symbols.end());
  cache_.store(std::move(key), std::move(symbols));
}

void merge_symbols(const Gpt2Vocabulary& vocabulary, MergeOrder order,
                   std::vector<int32_t>& symbols) {
  if (order == MergeOrder::kLeftmostFirst) {
    merge_by_queue(vocabulary, symbols);
    return;
  }
  std::vector<int32_t> merged;
  while (symbols.size() > 1) {
    const Gpt2Merge* best = nullptr;
    size_t best_at = 0;
    for (size_t i = 0; i + 1 < symbols.size(); ++i) {
      const Gpt2Merge* m = vocabulary.merge(symbols[i], symbols[i + 1]);
      if (m && (!best || m->rank < best->rank)) {
        best = m;
        best_at = i;
      }
    }
    if (!best) return;
    const int32_t best_left = symbols[best_at], best_right = symbols[best_at + 1];
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

void BytePairEncoder::append_token_bytes(int32_t id, std::string& out) const {
  if (id < 0 || uint64_t(id) >= vocabulary_->size()) {
    throw std::out_of_range("id " + std::to_string(id) + " not in vocabulary");
  }
  const std::string& token = vocabulary_->token(id);
  for (size_t at = 0; at < token.size();) {
    const DecodedCodePoint d = decode_utf8(token, at);
    const auto byte = vocabulary_->byte_map().byte(d.code_point);
    if (!byte) {
      throw std::runtime_error("token " + std::to_string(id) +
                               " holds a character outside the byte map");
    }
    out += char(*byte);
    at += d.length;
  }
}

}  // namespace cmpi::data
