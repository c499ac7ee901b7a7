// Each alternative of the pattern becomes a test at position i that returns
// the length of its match (0: no match), tried in the pattern's order. The
// backtracking of the regex is resolved by hand:
//   [^\r\n\p{L}\p{N}]?\p{L}+  the optional character is taken only when a
//                             letter follows it
//   \s*[\r\n]+                within the whitespace run at i, the match ends
//                             just after the run's last \r or \n
//   \s+(?!\S)                 a run that reaches the end of the text is
//                             taken whole; one followed by a non-space gives
//                             up its last character (which then starts the
//                             next piece), unless the run is one character,
//                             which the final \s+ takes
#include "data/llama3_pretokenizer.h"

#include "data/utf8.h"

namespace cmpi::data {
namespace {

bool is_newline(char32_t cp) {
  return cp == '\r' || cp == '\n';
}

// Case-insensitive as Unicode simple case folding: the only character
// besides the ASCII pair that folds to one of s, t, m, d, r, e, v, l is
// U+017F (long s -> s).
char32_t fold(char32_t cp) {
  if (cp >= 'A' && cp <= 'Z') return cp - 'A' + 'a';
  if (cp == 0x017F) return 's';
  return cp;
}

}  // namespace

size_t Llama3PreTokenizer::contraction(size_t i) const {
  const size_t n = code_points_.size();
  if (code_points_[i] != '\'' || i + 1 >= n) return 0;
  const char32_t a = fold(code_points_[i + 1]);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (i + 2 >= n) return 0;
  const char32_t b = fold(code_points_[i + 2]);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

size_t Llama3PreTokenizer::piece_length(size_t i) const {
  const size_t n = code_points_.size();
  const auto run_end = [&](size_t j, CharClass cls) {
    while (j < n && classes_[j] == cls) ++j;
    return j;
  };

  if (const size_t length = contraction(i)) return length;

  // [^\r\n\p{L}\p{N}]?\p{L}+
  size_t j = i;
  if (classes_[j] != CharClass::kLetter && classes_[j] != CharClass::kNumber &&
      !is_newline(code_points_[j]) && j + 1 < n && classes_[j + 1] == CharClass::kLetter) {
    ++j;
  }
  if (classes_[j] == CharClass::kLetter) return run_end(j, CharClass::kLetter) - i;

  // \p{N}{1,3}
  if (classes_[i] == CharClass::kNumber) {
    const size_t end = run_end(i, CharClass::kNumber);
    return end - i < 3 ? end - i : 3;
  }

  // " ?[^\s\p{L}\p{N}]+[\r\n]*"
  j = i;
  if (code_points_[j] == ' ' && j + 1 < n && classes_[j + 1] == CharClass::kOther) ++j;
  if (classes_[j] == CharClass::kOther) {
    j = run_end(j, CharClass::kOther);
    while (j < n && is_newline(code_points_[j])) ++j;
    return j - i;
  }

  // Only whitespace is left at i.
  const size_t end = run_end(i, CharClass::kSpace);
  // \s*[\r\n]+
  for (size_t k = end; k > i; --k) {
    if (is_newline(code_points_[k - 1])) return k - i;
  }
  // \s+(?!\S) and \s+
  if (end == n || end - i == 1) return end - i;
  return end - i - 1;
}

void Llama3PreTokenizer::split(std::string_view text, std::vector<std::string_view>& pieces) {
  classify_text(text, classes_, code_points_, offsets_);
  for (size_t i = 0; i < code_points_.size();) {
    const size_t length = piece_length(i);
    pieces.emplace_back(text.data() + offsets_[i], offsets_[i + length] - offsets_[i]);
    i += length;
  }
}

}  // namespace cmpi::data
