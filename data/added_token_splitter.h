// Cuts text at occurrences of added tokens, the first step of a Hugging
// Face tokenizer's encode: the text is scanned left to right, and at each
// position the longest token that occurs there is taken (leftmost-longest,
// non-overlapping), so "<|endoftext|>" wins over "<|" and a run of spaces
// over a shorter run. A token with lstrip also takes the whitespace just
// before it (not reaching into the previous match), one with rstrip the
// whitespace just after it (not reaching into the next match); that
// whitespace then belongs to no text segment. Whitespace is the Unicode
// White_Space property. Tokens are matched as bytes; in valid UTF-8 a
// token can then only start at a character boundary.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cmpi::data {

struct AddedTokenPattern {
  std::string content;
  int32_t id;
  bool lstrip;
  bool rstrip;
};

struct TextSegment {
  std::string_view text;  // the plain text between matches (token: the match)
  int32_t token_id;       // -1 for plain text
};

class AddedTokenSplitter {
 public:
  explicit AddedTokenSplitter(std::vector<AddedTokenPattern> tokens);
  bool empty() const { return tokens_.empty(); }
  // Appends the segments of `text` (views into it) to `out`, in order. Plain
  // segments are never empty.
  void split(std::string_view text, std::vector<TextSegment>& out) const;

 private:
  std::vector<AddedTokenPattern> tokens_;
  // Per first byte, the indices of the tokens starting with it, longest
  // first.
  std::array<std::vector<uint32_t>, 256> by_first_byte_;
};

}  // namespace cmpi::data
