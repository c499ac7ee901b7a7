// The Metaspace pre-tokenizer of SentencePiece-style tokenizer.json files:
// every space of a segment becomes the replacement character (U+2581 "▁"),
// the replacement is put before the segment unless it starts with one (per
// prepend_scheme: always; first, only for the segment that starts the
// input, not one after an added token; never), and with `split` the result
// is cut before each replacement character (a run of spaces gives one piece
// per space, the last one joined to the word after it).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "data/hf_tokenizer_file.h"

namespace cmpi::data {

class MetaspacePreTokenizer {
 public:
  explicit MetaspacePreTokenizer(MetaspaceSettings settings) : settings_(std::move(settings)) {}

  // Appends the pieces of the rewritten `segment` to `pieces`: views into
  // storage of this object, valid until the next call.
  void split(std::string_view segment, bool starts_input, std::vector<std::string_view>& pieces);

 private:
  MetaspaceSettings settings_;
  std::string rewritten_;
};

}  // namespace cmpi::data
