// BPE over characters, as the `tokenizers` library's BPE model runs on a
// piece when no ByteLevel pre-tokenizer has spelled the text's bytes as
// characters first: the SentencePiece-style models (Llama 2, Mistral) whose
// tokens are text with spaces written "▁". Each character of the piece
// starts as its vocabulary token; one outside the vocabulary becomes the
// <0xXX> tokens of its UTF-8 bytes when byte_fallback is on and the
// vocabulary has all of them, else the unknown token (one per character, or
// one per run of them with fuse_unk). The merges then apply in Hugging
// Face's order (merge_symbols, kLeftmostFirst); with ignore_merges a piece
// that is a vocabulary entry is that one token.
//
// The library's order is kept where it is surprising: an unknown token is
// held back until the next character found in the vocabulary (or the end of
// the piece), so byte-fallback tokens of a later character come before it,
// and with fuse_unk it absorbs unknown characters beyond them. That happens
// only when some <0xXX> tokens are missing.
//
// Bytes that are not UTF-8 are each a character of their own that no
// vocabulary holds, so they become their <0xXX> token (or the unknown one).
// Results are cached per piece, as BytePairEncoder does (data/piece_cache.h:
// bounded, since without a pre-tokenizer a piece is a whole segment).
// Not thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/gpt2_vocabulary.h"
#include "data/piece_cache.h"

namespace cmpi::data {

struct CharPairOptions {
  bool ignore_merges = false;
  bool byte_fallback = false;
  bool fuse_unk = false;
  int32_t unk_id = -1;  // -1: none
};

class CharPairEncoder {
 public:
  static constexpr size_t kCacheEntries = PieceCache::kEntries;

  CharPairEncoder(std::shared_ptr<const Gpt2Vocabulary> vocabulary, CharPairOptions options);

  // Appends the ids of `piece` to `out`. Throws std::runtime_error for a
  // character that has neither a token, byte-fallback tokens nor an unknown
  // token (HfTokenizerTables refuses such a file when it loads).
  void encode_piece(std::string_view piece, std::vector<int32_t>& out);

  // Whether byte_fallback covers every byte (all 256 <0xXX> tokens).
  bool covers_every_byte() const;
  // The byte a "<0xXX>" token stands for (two upper- or lower-case hex
  // digits, as the library's ByteFallback decoder reads them).
  static std::optional<uint8_t> fallback_byte(std::string_view token);

 private:
  void split_characters(std::string_view piece, std::vector<int32_t>& symbols) const;

  std::shared_ptr<const Gpt2Vocabulary> vocabulary_;
  CharPairOptions options_;
  std::array<int32_t, 256> byte_ids_;  // <0xXX> ids; -1 where missing or no fallback
  PieceCache cache_;
};

}  // namespace cmpi::data
