// Readers of a tokenizer.json's pipeline components (normalizer,
// pre_tokenizer, post_processor, decoder) for HfTokenizerFile::parse, which
// reads the model and the added tokens itself. Each fills its part of the
// HfTokenizerFile or throws "FILE: FIELD: why" (JsonFieldReader::fail).
#pragma once

#include <string>

#include "data/hf_tokenizer_file.h"
#include "data/json_field_reader.h"

namespace cmpi::data {

void read_normalizer(const JsonFieldReader& r, const JsonValue& n, const std::string& field,
                     HfTokenizerFile& out);

// What read_decoder found, for the checks that tie the decoder to the
// pre-tokenizer: the field of its first ByteLevel and of its first
// character-level step ("" where there is none).
struct DecoderShape {
  std::string byte_level_field;
  std::string character_field;
  std::string character_type;  // that step's type
};
DecoderShape read_decoder(const JsonFieldReader& r, const JsonValue& d, HfTokenizerFile& out);

// `pre` may be null. A ByteLevel decoder needs a ByteLevel pre-tokenizer, and
// a character-level decoder step must not follow one.
void read_pre_tokenizer(const JsonFieldReader& r, const JsonValue& pre, const DecoderShape& decoder,
                        HfTokenizerFile& out);

// Needs out.vocab and out.added_tokens, to check the ids a template adds.
void read_post_processor(const JsonFieldReader& r, const JsonValue& post, HfTokenizerFile& out);

}  // namespace cmpi::data
