// One Python process answers for all files and texts; the tokenizers here
// are loaded once per file.
#include "tests/data/hf_reference_check.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "data/hf_tokenizer.h"
#include "tests/data/python_reference.h"

namespace cmpi::data::testing {

void expect_same_as_hugging_face(const std::string& work_dir, const std::vector<std::string>& files,
                                 const std::vector<std::string>& texts) {
  const JsonValue answer = run_python(work_dir, "hf_tokenizer_reference.py", texts, files);
  ASSERT_EQ(answer.items().size(), files.size());
  size_t bytes = 0;
  for (const std::string& t : texts) bytes += t.size();
  for (size_t f = 0; f < files.size(); ++f) {
    SCOPED_TRACE(files[f]);
    const JsonValue& file_answer = answer.items()[f];
    const auto reference = id_lists(*file_answer.find("ids"));
    const auto& decoded = file_answer.find("decoded")->items();
    ASSERT_EQ(reference.size(), texts.size());
    ASSERT_EQ(decoded.size(), texts.size());
    const auto tokenizer = HfTokenizer::load(files[f]);
    size_t mismatches = 0, tokens = 0, decodes = 0, decode_mismatches = 0;
    for (size_t i = 0; i < texts.size(); ++i) {
      std::vector<int32_t> ids;
      tokenizer->encode(texts[i], ids);
      tokens += ids.size();
      if (ids != reference[i] && ++mismatches <= 5) {
        ADD_FAILURE() << "text " << i << ": " << json_string(texts[i]) << "\n  ids       "
                      << ::testing::PrintToString(ids) << "\n  reference "
                      << ::testing::PrintToString(reference[i]);
      }
      if (decoded[i].is_null()) continue;
      ++decodes;
      const std::string text = tokenizer->decode(reference[i]);
      if (text != decoded[i].text() && ++decode_mismatches <= 5) {
        ADD_FAILURE() << "decoding text " << i << "'s ids "
                      << ::testing::PrintToString(reference[i]) << "\n  gives     "
                      << json_string(text) << "\n  reference " << json_string(decoded[i].text());
      }
    }
    std::printf("%s: %zu texts, %zu bytes, %zu tokens, %zu mismatches; %zu decoded, %zu differ\n",
                files[f].c_str(), texts.size(), bytes, tokens, mismatches, decodes,
                decode_mismatches);
    EXPECT_EQ(mismatches, 0u);
    EXPECT_EQ(decode_mismatches, 0u);
  }
}

}  // namespace cmpi::data::testing
