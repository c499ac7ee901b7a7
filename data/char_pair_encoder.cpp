// split_characters walks the piece one UTF-8 character at a time with the
// library's pending-unknown state: a pending unknown token is emitted
// before the next character that has a vocabulary token, and (without
// fuse_unk) before the next unknown one.
#include "data/char_pair_encoder.h"

#include <cstdio>
#include <stdexcept>

#include "data/byte_pair_encoder.h"
#include "data/utf8.h"

namespace cmpi::data {

CharPairEncoder::CharPairEncoder(std::shared_ptr<const Gpt2Vocabulary> vocabulary,
                                 CharPairOptions options)
    : vocabulary_(std::move(vocabulary)), options_(options) {
  byte_ids_.fill(-1);
  if (!options_.byte_fallback) return;
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    if (const auto id = vocabulary_->id(name)) byte_ids_[size_t(b)] = *id;
  }
}

bool CharPairEncoder::covers_every_byte() const {
  for (const int32_t id : byte_ids_) {
    if (id < 0) return false;
  }
  return true;
}

std::optional<uint8_t> CharPairEncoder::fallback_byte(std::string_view token) {
  if (token.size() != 6 || token.substr(0, 3) != "<0x" || token[5] != '>') return std::nullopt;
  const auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  const int high = digit(token[3]), low = digit(token[4]);
  if (high < 0 || low < 0) return std::nullopt;
  return uint8_t(high * 16 + low);
}

void CharPairEncoder::split_characters(std::string_view piece,
                                       std::vector<int32_t>& symbols) const {
  bool unknown_pending = false;
  std::string character;
  for (size_t at = 0; at < piece.size();) {
    const DecodedCodePoint d = decode_utf8(piece, at);
    character.assign(piece.substr(at, d.length));
    at += d.length;
    if (const auto id = vocabulary_->id(character)) {
      if (unknown_pending) symbols.push_back(options_.unk_id);
      unknown_pending = false;
      symbols.push_back(*id);
      continue;
    }
    bool all_bytes = options_.byte_fallback;
    for (const char c : character) all_bytes = all_bytes && byte_ids_[uint8_t(c)] >= 0;
    if (all_bytes) {
      for (const char c : character) symbols.push_back(byte_ids_[uint8_t(c)]);
      continue;
    }
    if (options_.unk_id < 0) {
      throw std::runtime_error("character '" + character +
                               "' has no token, no byte-fallback tokens and no unknown token");
    }
    if (unknown_pending && !options_.fuse_unk) symbols.push_back(options_.unk_id);
    unknown_pending = true;
  }
  if (unknown_pending) symbols.push_back(options_.unk_id);
}

void CharPairEncoder::encode_piece(std::string_view piece, std::vector<int32_t>& out) {
  std::string key(piece);
  if (cache_.append(key, out)) return;
  std::vector<int32_t> symbols;
  if (options_.ignore_merges) {
    if (const auto whole = vocabulary_->id(key)) symbols.push_back(*whole);
  }
  if (symbols.empty()) {
    split_characters(piece, symbols);
    merge_symbols(*vocabulary_, MergeOrder::kLeftmostFirst, symbols);
  }
  out.insert(out.end(), symbols.begin(), symbols.end());
  cache_.store(std::move(key), std::move(symbols));
}

}  // namespace cmpi::data
