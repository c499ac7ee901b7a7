// A BPE tokenizer from a Hugging Face tokenizer.json (see hf_tokenizer_file.h
// for what is accepted): byte-level (GPT-2, GPT-NeoX, Llama 3) or over
// characters (SentencePiece style: Llama 2, Mistral). encode() takes the
// steps of the `tokenizers` library's encode, in its order:
//   1. cut the text at added tokens whose `normalized` is false, matched in
//      the raw text (AddedTokenSplitter)
//   2. normalize each plain segment (TextNormalizer)
//   3. cut the result at added tokens whose `normalized` is true, matched
//      against their normalized content
//   4. each remaining plain segment, byte-level: prepend a space if
//      add_prefix_space and it does not start with one, split it by GPT-2's
//      or Llama 3's pattern (or not at all), and BPE each piece over its
//      bytes (BytePairEncoder). Character-level: Metaspace (if the file has
//      it) rewrites and splits it, and each piece is BPE'd over its
//      characters (CharPairEncoder)
//   5. the post-processor's beginning-of-text ids go first
// Added tokens that occur in the text, special ones such as "<|endoftext|>"
// included, become their ids, as Hugging Face's encode does by default.
// The end-of-document id is that of the first of "<|endoftext|>" (GPT-2,
// GPT-NeoX), "<|end_of_text|>" (Llama 3) and "</s>" (Llama 2, Mistral) that
// the file has (an added token or a vocabulary entry); a file without any
// is refused.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "data/added_token_splitter.h"
#include "data/byte_pair_encoder.h"
#include "data/char_pair_encoder.h"
#include "data/gpt2_pretokenizer.h"
#include "data/hf_tokenizer_file.h"
#include "data/llama3_pretokenizer.h"
#include "data/metaspace_pretokenizer.h"
#include "data/text_normalizer.h"
#include "data/tokenizer.h"

namespace cmpi::data {

// The read-only part, shared by clones.
struct HfTokenizerTables {
  explicit HfTokenizerTables(const HfTokenizerFile& file);

  std::string path;
  std::shared_ptr<const Gpt2Vocabulary> vocabulary;
  bool byte_level;
  bool ignore_merges;
  CharPairOptions characters;  // character-level models
  TextNormalizer normalizer;
  AddedTokenSplitter raw_splitter;                         // added tokens with normalized: false
  AddedTokenSplitter normalized_splitter;                  // added tokens with normalized: true
  std::unordered_map<int32_t, std::string> added_content;  // id -> content
  bool add_prefix_space;
  SplitPattern split_pattern;
  bool metaspace;
  MetaspaceSettings metaspace_settings;
  std::vector<int32_t> prefix_ids;  // the post-processor's, before every encoding
  std::vector<DecoderStep> decoders;
  int32_t end_of_text;
  std::unordered_set<int32_t> silent_ids;  // decode to nothing: end of text, prefix_ids
  uint64_t vocab_size;                     // max id (vocabulary or added token) + 1
};

class HfTokenizer : public Tokenizer {
 public:
  // The end-of-document tokens looked for, in this order.
  static const std::vector<std::string>& end_of_text_names();

  // Throws std::runtime_error "PATH: FIELD: why" for a file it cannot use.
  static std::unique_ptr<HfTokenizer> load(const std::string& path);
  explicit HfTokenizer(std::shared_ptr<const HfTokenizerTables> tables);

  void encode(std::string_view text, std::vector<int32_t>& out) override;
  // Added tokens decode to their content, except end-of-document and the
  // post-processor's beginning-of-text ids (nothing); the rest through the
  // byte map (byte-level) or the file's decoder steps (token_string_decoder.h).
  std::string decode(const std::vector<int32_t>& ids) const override;
  uint64_t vocab_size() const override { return tables_->vocab_size; }
  int32_t end_of_document() const override { return tables_->end_of_text; }
  int32_t begin_of_document() const override {
    return tables_->prefix_ids.empty() ? tables_->end_of_text : tables_->prefix_ids.front();
  }
  std::unique_ptr<Tokenizer> clone() const override;
  // The file's path.
  std::string name() const override { return tables_->path; }

 private:
  // `starts_input`: the segment begins the text passed to encode().
  void encode_plain(std::string_view text, bool starts_input, std::vector<int32_t>& out);
  void encode_pieces(std::vector<int32_t>& out);

  std::shared_ptr<const HfTokenizerTables> tables_;
  std::optional<BytePairEncoder> bytes_;       // byte-level models
  std::optional<CharPairEncoder> characters_;  // character-level models
  Gpt2PreTokenizer gpt2_;
  Llama3PreTokenizer llama3_;
  MetaspacePreTokenizer metaspace_;
  // Scratch kept between calls to reuse storage.
  std::vector<TextSegment> raw_segments_, normalized_segments_;
  std::vector<std::string_view> pieces_;
  std::string prefixed_;
};

}  // namespace cmpi::data
