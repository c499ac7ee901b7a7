// The decoder of a character-level tokenizer.json: its steps turn the list
// of token strings (vocabulary entries, added tokens' content) into text,
// each step mapping the whole list as the `tokenizers` library's decoders
// do, and the result is their concatenation:
//   Replace(from, to)  every occurrence, in every token ("▁" -> " ")
//   ByteFallback       each run of <0xXX> tokens becomes those bytes
//   Fuse               the list becomes one string
//   Strip(c, start, stop)  up to `start` leading and `stop` trailing c of
//                      each token
//   Metaspace          the replacement character becomes a space, except
//                      in the first token, where it is dropped unless
//                      prepend_scheme is never
// One difference, so that decoding gives back the bytes that were encoded:
// ByteFallback keeps bytes that are not valid UTF-8 as they are, where the
// library writes U+FFFD for each. Without steps the tokens are concatenated
// (the library would join them with spaces).
#pragma once

#include <string>
#include <vector>

#include "data/hf_tokenizer_file.h"

namespace cmpi::data {

std::string decode_token_strings(std::vector<std::string> tokens,
                                 const std::vector<DecoderStep>& steps);

}  // namespace cmpi::data
