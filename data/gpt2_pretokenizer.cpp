// Decodes the text once into (class, code point, offset) arrays, then walks
// it: at each position the first alternative of the pattern that matches
// gives the piece's end. "\s+(?!\S)" is resolved without backtracking: a
// whitespace run that reaches the end of the text is taken whole; one
// followed by a non-space keeps its last character for the next piece (which
// then starts with it, e.g. " word"), unless the run is a single character,
// in which case the final "\s+" alternative takes it.
#include "data/gpt2_pretokenizer.h"

#include <unicode/uchar.h>

#include "data/utf8.h"

namespace cmpi::data {

CharClass classify_code_point(char32_t cp) {
  if (cp == kInvalidCodePoint) return CharClass::kOther;
  if (cp < 0x80) {  // fast path, same answers as ICU
    if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) return CharClass::kLetter;
    if (cp >= '0' && cp <= '9') return CharClass::kNumber;
    if (cp == ' ' || (cp >= '\t' && cp <= '\r')) return CharClass::kSpace;
    return CharClass::kOther;
  }
  const UChar32 c = UChar32(cp);
  if (u_isUWhiteSpace(c)) return CharClass::kSpace;
  switch (u_charType(c)) {
    case U_UPPERCASE_LETTER:
    case U_LOWERCASE_LETTER:
    case U_TITLECASE_LETTER:
    case U_MODIFIER_LETTER:
    case U_OTHER_LETTER:
      return CharClass::kLetter;
    case U_DECIMAL_DIGIT_NUMBER:
    case U_LETTER_NUMBER:
    case U_OTHER_NUMBER:
      return CharClass::kNumber;
    default:
      return CharClass::kOther;
  }
}

void classify_text(std::string_view text, std::vector<CharClass>& classes,
                   std::vector<char32_t>& code_points, std::vector<size_t>& offsets) {
  classes.clear();
  code_points.clear();
  offsets.clear();
  for (size_t at = 0; at < text.size();) {
    const DecodedCodePoint d = decode_utf8(text, at);
    classes.push_back(classify_code_point(d.code_point));
    code_points.push_back(d.code_point);
    offsets.push_back(at);
    at += d.length;
  }
  offsets.push_back(text.size());
}

void Gpt2PreTokenizer::split(std::string_view text, std::vector<std::string_view>& pieces) {
  classify_text(text, classes_, code_points_, offsets_);
  const size_t n = code_points_.size();

  // Length of the run of `cls` starting at i, after one optional leading
  // space; 0 if there is none.
  const auto run_with_optional_space = [&](size_t i, CharClass cls) -> size_t {
    size_t j = i;
    if (code_points_[j] == ' ' && j + 1 < n && classes_[j + 1] == cls) ++j;
    if (classes_[j] != cls) return 0;
    while (j < n && classes_[j] == cls) ++j;
    return j - i;
  };
  const auto contraction = [&](size_t i) -> size_t {
    if (code_points_[i] != '\'' || i + 1 >= n) return 0;
    const char32_t a = code_points_[i + 1];
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if (i + 2 >= n) return 0;
    const char32_t b = code_points_[i + 2];
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
  };

  size_t i = 0;
  while (i < n) {
    size_t length = contraction(i);
    if (!length) length = run_with_optional_space(i, CharClass::kLetter);
    if (!length) length = run_with_optional_space(i, CharClass::kNumber);
    if (!length) length = run_with_optional_space(i, CharClass::kOther);
    if (!length) {  // classes_[i] is kSpace: the only class left
      size_t end = i;
      while (end < n && classes_[end] == CharClass::kSpace) ++end;
      if (end == n || end - i == 1) {
        length = end - i;
      } else {
        length = end - i - 1;
      }
    }
    pieces.emplace_back(text.data() + offsets_[i], offsets_[i + length] - offsets_[i]);
    i += length;
  }
}

}  // namespace cmpi::data
