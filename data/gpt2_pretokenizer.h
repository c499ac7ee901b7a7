// GPT-2's pre-tokenizer: splits text into the pieces that BPE then encodes
// one by one, following the pattern of GPT-2's encoder.py
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// matched by hand over code points. Alternatives are tried in order at each
// position (not longest match), as a backtracking regex does. The classes:
//   \p{L}  general categories Lu Ll Lt Lm Lo     (ICU u_charType)
//   \p{N}  general categories Nd Nl No
//   \s     the Unicode White_Space property      (ICU u_isUWhiteSpace), the
//          definition of the Python `regex` module GPT-2 uses. JavaScript's
//          \s differs on two code points: it excludes U+0085 and includes
//          U+FEFF.
// Contractions are ASCII-apostrophe, lower-case only (GPT-2 has no
// IGNORECASE). Bytes that are not valid UTF-8 count as [^\s\p{L}\p{N}], so
// every input byte lands in exactly one piece.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace cmpi::data {

enum class CharClass : uint8_t { kLetter, kNumber, kSpace, kOther };

CharClass classify_code_point(char32_t cp);

// Decodes `text` (data/utf8.h: every byte kept) into the per-code-point
// tables the pre-tokenizers scan: class, value and byte offset, with one
// more offset, the text's end. The vectors are cleared first and keep their
// storage.
void classify_text(std::string_view text, std::vector<CharClass>& classes,
                   std::vector<char32_t>& code_points, std::vector<size_t>& offsets);

class Gpt2PreTokenizer {
 public:
  // Appends the pieces of `text` (views into it) to `pieces`, in order; their
  // concatenation is `text`.
  void split(std::string_view text, std::vector<std::string_view>& pieces);

 private:
  // Per code point of the current text: class, value, byte offset. Kept
  // between calls to reuse their storage.
  std::vector<CharClass> classes_;
  std::vector<char32_t> code_points_;
  std::vector<size_t> offsets_;
};

}  // namespace cmpi::data
