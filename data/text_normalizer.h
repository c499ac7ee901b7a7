// A tokenizer.json normalizer: its steps applied in order to each text
// segment. Unicode normal forms go through UnicodeNormalizer (bytes that
// are not UTF-8 are kept); Prepend puts its text before a segment that is
// not empty; Replace substitutes every non-overlapping occurrence of a
// string, left to right. Llama 2's and Mistral's files use
// [Prepend("▁"), Replace(" ", "▁")] to spell spaces as SentencePiece does.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "data/hf_tokenizer_file.h"
#include "data/unicode_normalizer.h"

namespace cmpi::data {

class TextNormalizer {
 public:
  // Throws std::runtime_error if ICU lacks a normal form.
  explicit TextNormalizer(std::vector<NormalizerStep> steps);
  bool empty() const { return steps_.empty(); }
  std::string normalize(std::string_view text) const;

 private:
  struct Step {
    NormalizerStep spec;
    UnicodeNormalizer unicode;  // kUnicode: its form alone; else no forms
  };
  std::vector<Step> steps_;
};

}  // namespace cmpi::data
