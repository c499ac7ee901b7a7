// The parts of a Hugging Face tokenizer.json (the `tokenizers` library's
// serialization format) that a byte-level BPE tokenizer such as GPT-2's or
// GPT-NeoX's uses, read and checked. Accepted:
//   model            type "BPE" (or no type, as older files write it): vocab
//                    (token -> id), merges as "left right" strings or
//                    [left, right] pairs, in rank order; ignore_merges;
//                    dropout null or 0; no continuing_subword_prefix or
//                    end_of_word_suffix. unk_token, fuse_unk and
//                    byte_fallback are accepted and never take effect,
//                    since every byte has a token.
//   added_tokens     id, content, special, lstrip, rstrip, normalized
//                    (single_word must be false)
//   normalizer       null, NFC, NFD, NFKC, NFKD, or a Sequence of these
//   pre_tokenizer    ByteLevel (add_prefix_space, use_regex), or a Sequence
//                    of a Split by GPT-2's pattern (Isolated, not inverted)
//                    and a ByteLevel with use_regex false, which is the same
//   post_processor   null or ByteLevel (neither changes ids), or a Sequence
//                    of ByteLevel
//   decoder          null or ByteLevel
//   truncation, padding  null
// Anything else (WordPiece, Unigram or WordLevel models, other normalizers
// or pre-tokenizers, TemplateProcessing and other post-processors that add
// ids, unknown keys) is refused: std::runtime_error "FILE: FIELD: why".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/gpt2_vocabulary.h"

namespace cmpi::data {

enum class UnicodeNormalForm { kNfc, kNfd, kNfkc, kNfkd };

struct HfAddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false;
  bool lstrip = false;     // whitespace before a match is dropped
  bool rstrip = false;     // whitespace after a match is dropped
  bool normalized = true;  // matched in normalized text (else in the raw text)
};

struct HfTokenizerFile {
  std::string path;  // labels errors
  std::vector<std::pair<std::string, int32_t>> vocab;
  std::vector<Gpt2MergeRule> merges;  // rank order
  bool ignore_merges = false;
  std::vector<HfAddedToken> added_tokens;
  std::vector<UnicodeNormalForm> normalizers;  // applied in order
  bool add_prefix_space = false;
  bool split_by_gpt2_pattern = true;  // ByteLevel's use_regex

  // Throws std::runtime_error naming the file and the field at fault.
  static HfTokenizerFile load(const std::string& path);
  // From file contents; `path` labels errors.
  static HfTokenizerFile parse(const std::string& json, const std::string& path);
};

// GPT-2's pre-tokenizer pattern as tokenizer.json spells it in a Split.
extern const char* const kGpt2SplitPattern;

}  // namespace cmpi::data
