// The parts of a Hugging Face tokenizer.json (the `tokenizers` library's
// serialization format) that a BPE tokenizer of the GPT-2, GPT-NeoX, Llama 3
// or SentencePiece (Llama 2, Mistral) kind uses, read and checked. Accepted:
//   model            type "BPE" (or no type, as older files write it): vocab
//                    (token -> id), merges as "left right" strings or
//                    [left, right] pairs, in rank order; ignore_merges;
//                    dropout null or 0; no continuing_subword_prefix or
//                    end_of_word_suffix; unk_token, fuse_unk, byte_fallback
//                    (they act only in a character-level model: below)
//   added_tokens     id, content, special, lstrip, rstrip, normalized
//                    (single_word must be false)
//   normalizer       null, NFC, NFD, NFKC, NFKD, Prepend, Replace of a
//                    String, or a Sequence of these
//   pre_tokenizer    byte-level: ByteLevel (add_prefix_space, use_regex), or
//                    a Sequence of a Split by GPT-2's or Llama 3's pattern
//                    (Isolated, not inverted) and a ByteLevel with use_regex
//                    false. Character-level: null or Metaspace
//                    (replacement, prepend_scheme, split)
//   post_processor   null, ByteLevel, TemplateProcessing whose single
//                    template is special tokens then $A (a beginning-of-text
//                    token), or a Sequence of these
//   decoder          byte-level: null or ByteLevel. Character-level: null,
//                    Replace of a String, ByteFallback, Fuse, Strip,
//                    Metaspace, or a Sequence of these
//   truncation, padding  null
// A ByteLevel pre-tokenizer makes the model byte-level (its tokens spell
// bytes through GPT-2's byte map); without one, BPE runs over the text's
// characters, with byte_fallback's <0xXX> tokens or unk_token for those
// outside the vocabulary. Anything else (WordPiece, Unigram or WordLevel
// models, other normalizers or pre-tokenizers, post-processors that add
// other ids, a ByteLevel decoder without a ByteLevel pre-tokenizer, unknown
// keys) is refused: std::runtime_error "FILE: FIELD: why".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/gpt2_vocabulary.h"

namespace cmpi::data {

enum class UnicodeNormalForm { kNfc, kNfd, kNfkc, kNfkd };

// One step of the normalizer; steps apply in file order.
struct NormalizerStep {
  enum class Kind { kUnicode, kPrepend, kReplace };
  Kind kind = Kind::kUnicode;
  UnicodeNormalForm form = UnicodeNormalForm::kNfc;  // kUnicode
  std::string text;         // kPrepend: the prefix; kReplace: the string replaced
  std::string replacement;  // kReplace
};

// How a byte-level pre-tokenizer cuts text before BPE.
enum class SplitPattern {
  kNone,    // ByteLevel with use_regex false alone: the text is one piece
  kGpt2,    // GPT-2's pattern (ByteLevel's own regex, or a Split by it)
  kLlama3,  // Llama 3's pattern, as a Split before ByteLevel
};

// Where Metaspace puts its replacement character before a text segment that
// does not start with one.
enum class PrependScheme {
  kAlways,  // before every segment
  kFirst,   // only before the segment that starts the input
  kNever,
};

struct MetaspaceSettings {
  std::string replacement = "\xE2\x96\x81";  // U+2581 "▁", one character
  PrependScheme prepend_scheme = PrependScheme::kAlways;
  bool split = true;  // cut before each replacement character
};

// One step of a character-level model's decoder; steps apply in order to
// the list of token strings.
struct DecoderStep {
  enum class Kind { kReplace, kByteFallback, kFuse, kStrip, kMetaspace };
  Kind kind = Kind::kFuse;
  std::string from, to;         // kReplace; kStrip: `from` is the character stripped
  size_t start = 0, stop = 0;   // kStrip: at most this many from each end
  MetaspaceSettings metaspace;  // kMetaspace
};

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
  // model
  std::vector<std::pair<std::string, int32_t>> vocab;
  std::vector<Gpt2MergeRule> merges;  // rank order
  bool ignore_merges = false;
  std::string unk_token;  // "" for none
  bool fuse_unk = false;
  bool byte_fallback = false;
  std::vector<HfAddedToken> added_tokens;
  std::vector<NormalizerStep> normalizers;
  // pre_tokenizer
  bool byte_level = true;         // a ByteLevel pre-tokenizer; else BPE over characters
  bool add_prefix_space = false;  // ByteLevel's
  SplitPattern split_pattern = SplitPattern::kGpt2;  // byte-level only
  bool metaspace = false;                            // character-level only
  MetaspaceSettings metaspace_settings;
  // post_processor: TemplateProcessing's ids before $A, added to every encode
  std::vector<int32_t> prefix_ids;
  // decoder: the steps of a character-level model (a byte-level model
  // decodes through the byte map)
  std::vector<DecoderStep> decoders;

  // Throws std::runtime_error naming the file and the field at fault.
  static HfTokenizerFile load(const std::string& path);
  // From file contents; `path` labels errors.
  static HfTokenizerFile parse(const std::string& json, const std::string& path);
};

// The pre-tokenizer patterns as tokenizer.json spells them in a Split.
extern const char* const kGpt2SplitPattern;
extern const char* const kLlama3SplitPattern;

}  // namespace cmpi::data
