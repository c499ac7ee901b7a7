// Llama 3's pre-tokenizer: splits text into the pieces that byte-level BPE
// then encodes one by one, following the pattern its tokenizer.json gives
// to a Split (the cl100k style of OpenAI's tiktoken, numbers grouped by at
// most three digits)
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//    ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// matched by hand over code points, alternatives tried in order at each
// position as a backtracking regex does. The classes are GPT-2's
// (classify_code_point: \p{L}, \p{N} by general category, \s the Unicode
// White_Space property). The contractions ignore case as the `tokenizers`
// library's regex engine (Oniguruma) does, by Unicode case folding: 'S, 'LL
// and also 'ſ (U+017F LATIN SMALL LETTER LONG S, which folds to s) are
// contractions. Bytes that are not valid UTF-8 count as [^\s\p{L}\p{N}]
// (as U+FFFD would), so every input byte lands in exactly one piece.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "data/gpt2_pretokenizer.h"

namespace cmpi::data {

class Llama3PreTokenizer {
 public:
  // Appends the pieces of `text` (views into it) to `pieces`, in order; their
  // concatenation is `text`.
  void split(std::string_view text, std::vector<std::string_view>& pieces);

 private:
  // The length in code points of the piece that starts at code point i.
  size_t piece_length(size_t i) const;
  size_t contraction(size_t i) const;

  // Per code point of the current text: class, value, byte offset. Kept
  // between calls to reuse their storage.
  std::vector<CharClass> classes_;
  std::vector<char32_t> code_points_;
  std::vector<size_t> offsets_;
};

}  // namespace cmpi::data
