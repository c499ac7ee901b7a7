// Byte-identical token ids against two independent GPT-2 encoders, through
// the project's Python environment: OpenAI's tiktoken (an Encoding from
// GPT-2's published ranks and encoder.py's split pattern, encode_ordinary)
// and Hugging Face's tokenizers (a byte-level BPE from encoder.json and
// vocab.bpe). gpt2_reference.py runs both over all texts in one process; its
// answer is compared with Gpt2Tokenizer on the same encoder.json and
// vocab.bpe, which gpt2_vocab_files.py derives from the ranks into the build
// tree (byte for byte GPT-2's published files; it checks their hashes). The
// two references are also compared with each other, so a wrong derivation
// shows as a disagreement between them rather than as a tokenizer bug.
// Without the Python environment or the ranks main() prints why and exits
// 77, which CTest reports as skipped.
//
// Both references are Rust regex engines whose \s is Unicode White_Space,
// as in GPT-2's Python regex, so U+0085 (NEL) and U+FEFF (BOM), which the
// JavaScript peer this test used before got wrong, are among the texts.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "data/gpt2_tokenizer.h"
#include "tests/data/python_reference.h"

namespace cmpi::data {
namespace {

using testing::json_string;

const std::string kWorkDir = CMPI_REFERENCE_WORK_DIR;
const std::string kVocabDir = kWorkDir + "/gpt2";

void expect_same_ids(const std::vector<std::string>& texts) {
  Gpt2Tokenizer tokenizer(std::make_shared<const Gpt2Vocabulary>(
      Gpt2Vocabulary::load(kVocabDir + "/encoder.json", kVocabDir + "/vocab.bpe")));
  const JsonValue answer = testing::run_python(kWorkDir, "gpt2_reference.py", texts,
                                               {testing::gpt2_ranks_path(), kVocabDir});
  size_t bytes = 0;
  for (const std::string& t : texts) bytes += t.size();
  std::vector<std::pair<std::string, std::vector<std::vector<int32_t>>>> references;
  for (const char* name : {"tiktoken", "tokenizers"}) {
    const JsonValue* ids = answer.find(name);
    ASSERT_NE(ids, nullptr) << name;
    references.emplace_back(name, testing::id_lists(*ids));
    ASSERT_EQ(references.back().second.size(), texts.size()) << name;
  }
  // Every text is checked, the first few failures shown in full.
  size_t tokens = 0, disagreements = 0;
  std::vector<size_t> mismatches(references.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    std::vector<int32_t> ids;
    tokenizer.encode(texts[i], ids);
    tokens += ids.size();
    if (references[0].second[i] != references[1].second[i] && ++disagreements <= 5) {
      ADD_FAILURE() << "the references disagree (wrong derived files?) on text " << i << ": "
                    << json_string(texts[i]);
    }
    for (size_t r = 0; r < references.size(); ++r) {
      const auto& [name, reference] = references[r];
      if (ids != reference[i] && ++mismatches[r] <= 5) {
        ADD_FAILURE() << name << ", text " << i << ": " << json_string(texts[i]) << "\n  ids       "
                      << ::testing::PrintToString(ids) << "\n  reference "
                      << ::testing::PrintToString(reference[i]);
      }
    }
  }
  std::printf(
      "%zu texts, %zu bytes, %zu tokens: %zu mismatches with %s, %zu with %s, %zu between "
      "them\n",
      texts.size(), bytes, tokens, mismatches[0], references[0].first.c_str(), mismatches[1],
      references[1].first.c_str(), disagreements);
  EXPECT_EQ(disagreements, 0u);
  for (size_t r = 0; r < references.size(); ++r) {
    EXPECT_EQ(mismatches[r], 0u) << references[r].first;
  }
}

// GPT-2's ids as published (encoder.json), independent of both references.
TEST(Gpt2Reference, KnownIds) {
  Gpt2Tokenizer tokenizer(std::make_shared<const Gpt2Vocabulary>(
      Gpt2Vocabulary::load(kVocabDir + "/encoder.json", kVocabDir + "/vocab.bpe")));
  std::vector<int32_t> ids;
  tokenizer.encode("Hello world", ids);
  EXPECT_EQ(ids, (std::vector<int32_t>{15496, 995}));
  EXPECT_EQ(tokenizer.vocab_size(), 50257u);
}

TEST(Gpt2Reference, AdversarialTexts) {
  expect_same_ids({
      "Hello world",
      "I'm sure it's what they've said: we'll see, you'd know, they're here; don't.",
      "CAPS DON'T CONTRACT: IT'S, I'M, WE'LL",
      "tab\tseparated\t\tvalues\n\n\nthree newlines   three spaces    four",
      "trailing whitespace   ",
      "trailing newline\n",
      "  leading spaces",
      "\n",
      " ",
      "digits 0123456789 12,345.67 1e10 3rd 42nd",
      "punctuation!!! ??? ... --- *** ((())) [[]] {{}} <<>> ,,,, ;;;; :::: ''' \"\"\"",
      "mixed 'quotes' and \"double\" and `back` ''s ' s",
      "Café crème brûlée, naïve façade, Straße, Ærøskøbing, Œuvre",
      "中文字符测试，标点符号。日本語のテキスト、カタカナ。한국어 텍스트",
      "emoji 😀😃😄 👍🏽 👨‍👩‍👧‍👦 🇩🇪 ❤️ mixed😀text",
      "Ελληνικά κείμενο, русский текст, עברית, العربية, हिन्दी",
      "math ∑∫√∞ ≠ ≤ ≥ ± × ÷ ½ ¾ Ⅻ ²³",
      "\r\nwindows\r\nline endings\r\n",
      "nbsp\xC2\xA0"
      "here and\xE2\x80\x83"
      "em space and\xE3\x80\x80ideographic space",
      "zero\xE2\x80\x8Bwidth\xE2\x80\x8Cjoiner",
      // U+0085 (NEL) is whitespace, U+FEFF (BOM) is not (Unicode White_Space).
      "x \xC2\x85y",
      "x \xEF\xBB\xBFy",
      "\xC2\x85\xC2\x85 a\xC2\x85\n\xEF\xBB\xBF\xEF\xBB\xBF b \xEF\xBB\xBF",
      "<|endoftext|> is plain text here",
      "code: for (int i = 0; i < n; ++i) { x[i] = y[i] * 2; } // done",
      "https://example.com/path?query=1&b=2#frag user@example.com",
      "a",
      "",
  });
}

TEST(Gpt2Reference, RandomCompositions) {
  const uint64_t seed = uint64_t(std::random_device{}()) << 32 | std::random_device{}();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const std::vector<std::string> atoms{
      "the", " the", "The",      "ing", " a",       "'s",          "'t", "'re", "'ve",  "'m",
      "'ll", "'d",   "'",        " '",  " ",        "  ",          "\t", "\n",  "\r\n", "0",
      "12",  " 345", "!",        "?!",  " ,",       ".",           "-",  "é",   "ß",    "中",
      "文",  "😀",    "👍🏽", "Ω",   "ä",        "\xC2\xA0",    "$",  "%",   "_",    "@",
      "#",   "\"",   "(",        ")",   "\xC2\x85", "\xEF\xBB\xBF"};
  std::vector<std::string> texts(300);
  for (std::string& text : texts) {
    for (size_t n = rng() % 40; n > 0; --n) text += atoms[rng() % atoms.size()];
  }
  expect_same_ids(texts);
}

}  // namespace
}  // namespace cmpi::data

int main(int argc, char** argv) {
  try {
    const std::string skip = cmpi::data::testing::prepare_gpt2_reference({"tiktoken", "tokenizers"},
                                                                         cmpi::data::kVocabDir);
    if (!skip.empty()) {
      std::fprintf(stderr, "SKIPPED: GPT-2 reference test: %s\n", skip.c_str());
      return 77;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "GPT-2 reference test: %s\n", e.what());
    return 1;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
