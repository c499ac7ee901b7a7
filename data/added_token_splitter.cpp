// Two passes: find the leftmost-longest matches, then widen each by its
// strip flags between its neighbours and emit the text in between.
#include "data/added_token_splitter.h"

#include <algorithm>

#include "data/gpt2_pretokenizer.h"
#include "data/utf8.h"

namespace cmpi::data {
namespace {

struct Match {
  size_t begin, end;
  uint32_t token;
};

bool is_white_space(char32_t cp) {
  return classify_code_point(cp) == CharClass::kSpace;
}

// The start of the code point that ends at `end` (UTF-8 continuation bytes
// are 10xxxxxx), found by stepping back at most 3 bytes and checking that
// the sequence decodes to exactly that span; a stray byte stands alone.
size_t previous_code_point(std::string_view text, size_t end) {
  for (size_t back = 2; back <= 4 && back <= end; ++back) {
    const DecodedCodePoint d = decode_utf8(text, end - back);
    if (d.code_point != kInvalidCodePoint && d.length == back) return end - back;
  }
  return end - 1;
}

}  // namespace

AddedTokenSplitter::AddedTokenSplitter(std::vector<AddedTokenPattern> tokens)
    : tokens_(std::move(tokens)) {
  for (uint32_t i = 0; i < tokens_.size(); ++i) {
    by_first_byte_[uint8_t(tokens_[i].content[0])].push_back(i);
  }
  for (auto& list : by_first_byte_) {
    std::stable_sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) {
      return tokens_[a].content.size() > tokens_[b].content.size();
    });
  }
}

void AddedTokenSplitter::split(std::string_view text, std::vector<TextSegment>& out) const {
  std::vector<Match> matches;
  for (size_t at = 0; at < text.size();) {
    bool found = false;
    for (const uint32_t i : by_first_byte_[uint8_t(text[at])]) {
      const std::string& content = tokens_[i].content;
      if (text.compare(at, content.size(), content) == 0) {
        matches.push_back({at, at + content.size(), i});
        at += content.size();
        found = true;
        break;
      }
    }
    if (!found) ++at;
  }

  size_t plain_start = 0;
  for (size_t m = 0; m < matches.size(); ++m) {
    Match match = matches[m];
    const AddedTokenPattern& token = tokens_[match.token];
    if (token.lstrip) {
      while (match.begin > plain_start) {
        const size_t before = previous_code_point(text, match.begin);
        if (!is_white_space(decode_utf8(text, before).code_point)) break;
        match.begin = before;
      }
    }
    if (token.rstrip) {
      const size_t limit = m + 1 < matches.size() ? matches[m + 1].begin : text.size();
      while (match.end < limit) {
        const DecodedCodePoint d = decode_utf8(text, match.end);
        if (!is_white_space(d.code_point) || match.end + d.length > limit) break;
        match.end += d.length;
      }
    }
    if (match.begin > plain_start) {
      out.push_back({text.substr(plain_start, match.begin - plain_start), -1});
    }
    out.push_back({text.substr(match.begin, match.end - match.begin), token.id});
    plain_start = match.end;
  }
  if (plain_start < text.size()) out.push_back({text.substr(plain_start), -1});
}

}  // namespace cmpi::data
