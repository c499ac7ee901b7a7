// GPT-2's BPE tables as loaded from its two files:
//   encoder.json (vocab.json)  a JSON object: token string -> id, where a
//                              token string spells bytes through
//                              ByteToUnicode
//   vocab.bpe (merges.txt)     one merge "left right" per line, rank = line
//                              number among merge lines; a first line
//                              starting "#version" is a header
// or, for a Hugging Face tokenizer.json, as the token -> id and merge lists
// that file's reader extracted (from_tables). Merges are resolved to ids once
// here (pair of ids -> rank and merged id), so BPE works on integers. Every
// merge's parts and result, and every single-byte token, must be in the
// vocabulary (true of GPT-2's and GPT-NeoX's files); anything else is an
// error naming the file and line or field.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "data/byte_to_unicode.h"

namespace cmpi::data {

struct Gpt2MergeRule {
  std::string left, right;
};

struct Gpt2Merge {
  int32_t rank;
  int32_t merged_id;
};

class Gpt2Vocabulary {
 public:
  // Throws std::runtime_error naming the file (and line) at fault.
  static Gpt2Vocabulary load(const std::string& encoder_path, const std::string& merges_path);
  // From in-memory file contents; `*_name` label errors.
  static Gpt2Vocabulary parse(const std::string& encoder_json, const std::string& encoder_name,
                              const std::string& merges_text, const std::string& merges_name);

  // From a token -> id list and merges in rank order, read from `file_name`
  // where they are the fields `vocab_field` and `merge_field(i)` (these
  // label errors: "tokenizer.json: model.merges[7]: 'x' is not in
  // model.vocab"). Without `byte_tokens` the 256 single-byte tokens are not
  // required (nor byte_id() set): a character-level BPE model, whose tokens
  // are plain text, uses the same tables.
  static Gpt2Vocabulary from_tables(std::vector<std::pair<std::string, int32_t>> vocab,
                                    const std::vector<Gpt2MergeRule>& merges,
                                    const std::string& file_name, const std::string& vocab_field,
                                    const std::function<std::string(size_t)>& merge_field,
                                    bool byte_tokens = true);

  const ByteToUnicode& byte_map() const { return byte_map_; }
  int32_t byte_id(uint8_t byte) const { return byte_ids_[byte]; }
  // The merge of (left, right), if the pair is one.
  const Gpt2Merge* merge(int32_t left, int32_t right) const;
  // Max id + 1.
  uint64_t size() const { return tokens_.size(); }
  // The token string of an id ("" for an id no entry uses).
  const std::string& token(int32_t id) const { return tokens_.at(size_t(id)); }
  std::optional<int32_t> id(const std::string& token) const;

 private:
  // Sets the id of `token`; throws "`where`: id N used twice".
  void add_token(std::string token, int64_t id, const std::string& where);
  // Finds the 256 single-byte tokens; throws "`where`: no token for byte N".
  void find_byte_tokens(const std::string& where);
  // Adds the merge (left, right) at the next rank; throws "`where`'x' is not
  // in `vocab_label`".
  void add_merge(const std::string& left, const std::string& right, const std::string& where,
                 const std::string& vocab_label);
  static uint64_t pair_key(int32_t left, int32_t right) {
    return (uint64_t(uint32_t(left)) << 32) | uint32_t(right);
  }

  ByteToUnicode byte_map_;
  std::unordered_map<std::string, int32_t> ids_;
  std::vector<std::string> tokens_;
  std::vector<int32_t> byte_ids_ = std::vector<int32_t>(256, -1);
  std::unordered_map<uint64_t, Gpt2Merge> merges_;
  int32_t next_rank_ = 0;
};

}  // namespace cmpi::data
