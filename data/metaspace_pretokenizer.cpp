// Rewrites the segment into rewritten_ first, then cuts it: the views must
// not outlive a reallocation of the string they point into.
#include "data/metaspace_pretokenizer.h"

namespace cmpi::data {

void MetaspacePreTokenizer::split(std::string_view segment, bool starts_input,
                                  std::vector<std::string_view>& pieces) {
  const std::string& mark = settings_.replacement;
  rewritten_.clear();
  for (const char c : segment) {
    if (c == ' ') {
      rewritten_ += mark;
    } else {
      rewritten_ += c;
    }
  }
  const bool starts_with_mark = rewritten_.compare(0, mark.size(), mark) == 0;
  const bool prepend = settings_.prepend_scheme == PrependScheme::kAlways ||
                       (settings_.prepend_scheme == PrependScheme::kFirst && starts_input);
  if (prepend && !starts_with_mark && !rewritten_.empty()) rewritten_.insert(0, mark);
  if (rewritten_.empty()) return;
  const std::string_view text(rewritten_);
  if (!settings_.split) {
    pieces.push_back(text);
    return;
  }
  size_t start = 0;
  for (size_t found = text.find(mark, 1); found != std::string_view::npos;
       found = text.find(mark, found + mark.size())) {
    pieces.push_back(text.substr(start, found - start));
    start = found;
  }
  pieces.push_back(text.substr(start));
}

}  // namespace cmpi::data
