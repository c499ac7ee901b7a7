// The comparison both tokenizer.json reference tests make: every file
// encodes every text to the ids of Hugging Face's tokenizers library
// (hf_tokenizer_reference.py), and decodes them to the library's text where
// it gives one (texts whose ids hold no added token). Mismatches are test
// failures (the first five per file shown); a summary line per file is
// printed.
#pragma once

#include <string>
#include <vector>

namespace cmpi::data::testing {

void expect_same_as_hugging_face(const std::string& work_dir, const std::vector<std::string>& files,
                                 const std::vector<std::string>& texts);

}  // namespace cmpi::data::testing
