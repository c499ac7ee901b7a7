// UTF-8 decoding that never fails: a well-formed sequence yields its code
// point; any byte that does not start one (stray continuation, overlong form,
// surrogate, truncated sequence, > U+10FFFF) yields kInvalidCodePoint and a
// length of 1, so tokenizers still see every input byte exactly once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace cmpi::data {

constexpr char32_t kInvalidCodePoint = 0xFFFFFFFFu;

struct DecodedCodePoint {
  char32_t code_point;
  size_t length;  // bytes consumed, 1..4
};

// Decodes the code point starting at text[at] (at < text.size()).
DecodedCodePoint decode_utf8(std::string_view text, size_t at);

// Appends the UTF-8 encoding of cp (<= U+10FFFF) to out.
void append_utf8(char32_t cp, std::string& out);

}  // namespace cmpi::data
