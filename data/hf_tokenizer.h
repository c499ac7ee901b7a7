// A byte-level BPE tokenizer from a Hugging Face tokenizer.json (see
// hf_tokenizer_file.h for what is accepted). encode() takes the steps of the
// `tokenizers` library's encode, in its order:
//   1. cut the text at added tokens whose `normalized` is false, matched in
//      the raw text (AddedTokenSplitter)
//   2. normalize each plain segment (UnicodeNormalizer)
//   3. cut the result at added tokens whose `normalized` is true, matched
//      against their normalized content
//   4. each remaining plain segment: prepend a space if add_prefix_space and
//      it does not start with one, split it by GPT-2's pattern (unless
//      use_regex is false: then it is one piece), and BPE each piece in
//      Hugging Face's merge order (BytePairEncoder)
// Added tokens that occur in the text, special ones such as "<|endoftext|>"
// included, become their ids, as Hugging Face's encode does by default.
// The end-of-document id is that of "<|endoftext|>" (an added token or a
// vocabulary entry); a file without one is refused.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "data/added_token_splitter.h"
#include "data/byte_pair_encoder.h"
#include "data/gpt2_pretokenizer.h"
#include "data/hf_tokenizer_file.h"
#include "data/tokenizer.h"
#include "data/unicode_normalizer.h"

namespace cmpi::data {

// The read-only part, shared by clones.
struct HfTokenizerTables {
  explicit HfTokenizerTables(const HfTokenizerFile& file);

  std::string path;
  std::shared_ptr<const Gpt2Vocabulary> vocabulary;
  bool ignore_merges;
  UnicodeNormalizer normalizer;
  AddedTokenSplitter raw_splitter;                         // added tokens with normalized: false
  AddedTokenSplitter normalized_splitter;                  // added tokens with normalized: true
  std::unordered_map<int32_t, std::string> added_content;  // id -> content
  bool add_prefix_space;
  bool split_by_gpt2_pattern;
  int32_t end_of_text;
  uint64_t vocab_size;  // max id (vocabulary or added token) + 1
};

class HfTokenizer : public Tokenizer {
 public:
  static constexpr const char* kEndOfText = "<|endoftext|>";

  // Throws std::runtime_error "PATH: FIELD: why" for a file it cannot use.
  static std::unique_ptr<HfTokenizer> load(const std::string& path);
  explicit HfTokenizer(std::shared_ptr<const HfTokenizerTables> tables);

  void encode(std::string_view text, std::vector<int32_t>& out) override;
  // Added tokens decode to their content, except end-of-document (nothing).
  std::string decode(const std::vector<int32_t>& ids) const override;
  uint64_t vocab_size() const override { return tables_->vocab_size; }
  int32_t end_of_document() const override { return tables_->end_of_text; }
  std::unique_ptr<Tokenizer> clone() const override;
  // The file's path.
  std::string name() const override { return tables_->path; }

 private:
  void encode_plain(std::string_view text, std::vector<int32_t>& out);

  std::shared_ptr<const HfTokenizerTables> tables_;
  BytePairEncoder encoder_;
  Gpt2PreTokenizer pre_tokenizer_;
  // Scratch kept between calls to reuse storage.
  std::vector<TextSegment> raw_segments_, normalized_segments_;
  std::vector<std::string_view> pieces_;
  std::string prefixed_;
};

}  // namespace cmpi::data
