// GPT-2's BPE tables as loaded from its two files:
//   encoder.json (vocab.json)  a JSON object: token string -> id, where a
//                              token string spells bytes through
//                              ByteToUnicode
//   vocab.bpe (merges.txt)     one merge "left right" per line, rank = line
//                              number among merge lines; a first line
//                              starting "#version" is a header
// Merges are resolved to ids once here (pair of ids -> rank and merged id),
// so BPE works on integers. Every merge's parts and result, and every
// single-byte token, must be in the encoder (true of GPT-2's files);
// anything else is an error naming the file and line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "data/byte_to_unicode.h"

namespace cmpi::data {

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
  static uint64_t pair_key(int32_t left, int32_t right) {
    return (uint64_t(uint32_t(left)) << 32) | uint32_t(right);
  }

  ByteToUnicode byte_map_;
  std::unordered_map<std::string, int32_t> ids_;
  std::vector<std::string> tokens_;
  std::vector<int32_t> byte_ids_ = std::vector<int32_t>(256, -1);
  std::unordered_map<uint64_t, Gpt2Merge> merges_;
};

}  // namespace cmpi::data
