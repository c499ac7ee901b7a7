// Tokenizer unit tests: GPT-2's byte-to-unicode table, the pre-tokenizer's
// splits, BPE merges by rank on a tiny hand-made vocabulary, vocabulary file
// errors, the byte tokenizer, and decode(encode(x)) == x on random bytes.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "data/byte_to_unicode.h"
#include "data/byte_tokenizer.h"
#include "data/gpt2_pretokenizer.h"
#include "data/gpt2_tokenizer.h"
#include "tests/data/data_test_util.h"
#include "tests/support/test_seed.h"

namespace cmpi::data {
namespace {

std::vector<std::string> split(const std::string& text) {
  Gpt2PreTokenizer pre;
  std::vector<std::string_view> views;
  pre.split(text, views);
  return std::vector<std::string>(views.begin(), views.end());
}

Gpt2Tokenizer tiny_tokenizer(const std::vector<std::string>& merges) {
  const testing::TinyVocabulary tiny = testing::make_tiny_vocabulary(merges);
  return Gpt2Tokenizer(std::make_shared<const Gpt2Vocabulary>(
      Gpt2Vocabulary::parse(tiny.encoder_json, "encoder.json", tiny.merges_text, "vocab.bpe")));
}

std::vector<int32_t> encode(Tokenizer& tokenizer, const std::string& text) {
  std::vector<int32_t> ids;
  tokenizer.encode(text, ids);
  return ids;
}

TEST(ByteToUnicode, MatchesGpt2Table) {
  const ByteToUnicode map;
  EXPECT_EQ(map.code_point('A'), U'A');
  EXPECT_EQ(map.code_point('!'), U'!');
  EXPECT_EQ(map.code_point(0xA1), char32_t(0xA1));
  EXPECT_EQ(map.code_point(0xFF), char32_t(0xFF));
  EXPECT_EQ(map.code_point(0), char32_t(0x100));
  EXPECT_EQ(map.code_point(' '), char32_t(0x120));   // "Ġ"
  EXPECT_EQ(map.code_point('\n'), char32_t(0x10A));  // "Ċ"
  EXPECT_EQ(map.code_point(0x7F), char32_t(0x121));
  EXPECT_EQ(map.code_point(0xA0), char32_t(0x142));
  EXPECT_EQ(map.code_point(0xAD), char32_t(0x143));
  EXPECT_EQ(map.utf8(' '), "\xC4\xA0");
  std::set<char32_t> seen;
  for (int b = 0; b < 256; ++b) {
    const char32_t cp = map.code_point(uint8_t(b));
    EXPECT_TRUE(seen.insert(cp).second) << "byte " << b;
    EXPECT_EQ(map.byte(cp), uint8_t(b));
  }
  EXPECT_FALSE(map.byte(0x144).has_value());
  EXPECT_FALSE(map.byte(0x20).has_value());
}

TEST(Gpt2PreTokenizer, SplitsLikeGpt2Pattern) {
  using V = std::vector<std::string>;
  EXPECT_EQ(split("Hello world"), (V{"Hello", " world"}));
  EXPECT_EQ(split("it's they're I'LL"), (V{"it", "'s", " they", "'re", " I", "'", "LL"}));
  EXPECT_EQ(split("a   b"), (V{"a", "  ", " b"}));
  EXPECT_EQ(split("a\n\nb"), (V{"a", "\n", "\n", "b"}));
  EXPECT_EQ(split("x \n y"), (V{"x", " \n", " y"}));
  EXPECT_EQ(split("end  "), (V{"end", "  "}));
  EXPECT_EQ(split("abc123 456"), (V{"abc", "123", " 456"}));
  EXPECT_EQ(split("hi!!! ?? ."), (V{"hi", "!!!", " ??", " ."}));
  EXPECT_EQ(split("café ß中文😀"), (V{"café", " ß中文", "😀"}));
  EXPECT_EQ(split("\t\tx"), (V{"\t", "\t", "x"}));  // only ' ' may lead a word
  EXPECT_EQ(split("Ⅻ½"), (V{"Ⅻ½"}));                // Nl and No are \p{N}
  EXPECT_EQ(split("a\xC2\x85"
                  "b"),
            (V{"a", "\xC2\x85", "b"}));  // U+0085 is White_Space
  // GPT-2 (Python) splits "x \u0085y" as x | ' ' | U+0085 | y; JavaScript's \s would not.
  EXPECT_EQ(split("x \xC2\x85"
                  "y"),
            (V{"x", " ", "\xC2\x85", "y"}));
  // U+FEFF is not White_Space: it joins the leading space as punctuation.
  EXPECT_EQ(split("x \xEF\xBB\xBFy"), (V{"x", " \xEF\xBB\xBF", "y"}));
  EXPECT_EQ(split("a\xff\xfe b"), (V{"a", "\xff\xfe", " b"}));  // invalid UTF-8 is "other"
  EXPECT_EQ(split(""), V{});
}

TEST(Gpt2PreTokenizer, PiecesConcatenateToInput) {
  const uint64_t seed = cmpi::testing::test_seed();
  SCOPED_TRACE("CMPI_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const std::vector<std::string> atoms{"a",  "Z", "7", " ",  "  ", "\n",       "\t",   "'",
                                       "'s", "!", "é", "中", "😀",  "\xC2\x85", "\xff", "\xe4\xb8"};
  for (int round = 0; round < 200; ++round) {
    std::string text;
    for (size_t n = rng() % 30; n > 0; --n) text += atoms[rng() % atoms.size()];
    std::string joined;
    for (const std::string& piece : split(text)) {
      EXPECT_FALSE(piece.empty());
      joined += piece;
    }
    ASSERT_EQ(joined, text);
  }
}

TEST(Gpt2Tokenizer, MergesFollowRankNotPosition) {
  // ids: bytes 0..255, then "bc" = 256, "ab" = 257, "abc" = 258, eot = 259.
  Gpt2Tokenizer tokenizer = tiny_tokenizer({"b c", "a b", "a bc"});
  // "abc": "b c" (rank 0) wins over "a b" (rank 1), then "a bc".
  EXPECT_EQ(encode(tokenizer, "abc"), (std::vector<int32_t>{258}));
  EXPECT_EQ(encode(tokenizer, "ab"), (std::vector<int32_t>{257}));
  // "abab": both "a b" pairs merge in the same step.
  EXPECT_EQ(encode(tokenizer, "abab"), (std::vector<int32_t>{257, 257}));
  EXPECT_EQ(encode(tokenizer, "xa"), (std::vector<int32_t>{'x', 'a'}));
  // A space before a word is a byte of the piece (" abc" = Ġ + abc).
  EXPECT_EQ(encode(tokenizer, "c abc"), (std::vector<int32_t>{'c', ' ', 258}));
  EXPECT_EQ(tokenizer.end_of_document(), 259);
  EXPECT_EQ(tokenizer.vocab_size(), 260u);
  // Cached pieces give the same ids.
  EXPECT_EQ(encode(tokenizer, "abc abc abc"), (std::vector<int32_t>{258, ' ', 258, ' ', 258}));
}

TEST(Gpt2Tokenizer, MergeChainsOnSpaceMappedBytes) {
  Gpt2Tokenizer tokenizer = tiny_tokenizer({"Ġ t", "h e", "Ġt he"});
  EXPECT_EQ(encode(tokenizer, "the the"), (std::vector<int32_t>{'t', 257, 258}));
  EXPECT_EQ(tokenizer.decode({'t', 257, 258, 259}), "the the");
}

TEST(Gpt2Tokenizer, DecodeInvertsEncodeOnRandomBytes) {
  const uint64_t seed = cmpi::testing::test_seed();
  SCOPED_TRACE("CMPI_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  Gpt2Tokenizer tokenizer = tiny_tokenizer({"Ġ t", "h e", "Ġt he", "e r", "Ã ©"});
  for (int round = 0; round < 100; ++round) {
    std::string text(rng() % 200, '\0');
    for (char& c : text) c = rng() % 3 ? "the r \n\xc3\xa9"[rng() % 9] : char(rng());
    const std::vector<int32_t> ids = encode(tokenizer, text);
    ASSERT_EQ(tokenizer.decode(ids), text);
  }
}

TEST(Gpt2Vocabulary, MergeOfUnknownTokenNamesFileAndLine) {
  testing::TinyVocabulary tiny = testing::make_tiny_vocabulary({"a b"});
  tiny.merges_text += "ab zz\n";
  try {
    Gpt2Vocabulary::parse(tiny.encoder_json, "enc.json", tiny.merges_text, "m.bpe");
    FAIL() << "accepted a merge of unknown tokens";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("m.bpe:3: 'zz' is not in enc.json"), std::string::npos)
        << e.what();
  }
}

TEST(Gpt2Vocabulary, MalformedMergeLineAndEncoder) {
  testing::TinyVocabulary tiny = testing::make_tiny_vocabulary({});
  EXPECT_THROW(Gpt2Vocabulary::parse(tiny.encoder_json, "e", tiny.merges_text + "a b c\n", "m"),
               std::runtime_error);
  EXPECT_THROW(Gpt2Vocabulary::parse("{\"a\": 1", "e", "", "m"), std::runtime_error);
  // No token for byte 0 ("Ā").
  EXPECT_THROW(Gpt2Vocabulary::parse("{\"a\": 0}", "e", "", "m"), std::runtime_error);
}

TEST(ByteTokenizer, TokenIsByteAndEndOfDocumentIs256) {
  ByteTokenizer tokenizer;
  EXPECT_EQ(encode(tokenizer, std::string("a\0\xff", 3)), (std::vector<int32_t>{97, 0, 255}));
  EXPECT_EQ(tokenizer.vocab_size(), 257u);
  EXPECT_EQ(tokenizer.end_of_document(), 256);
  EXPECT_EQ(tokenizer.decode({104, 105, 256}), "hi");
  EXPECT_THROW(tokenizer.decode({300}), std::out_of_range);
  EXPECT_EQ(make_tokenizer("bytes", "", "")->name(), "bytes");
  EXPECT_THROW(make_tokenizer("gpt2", "", ""), std::invalid_argument);
  EXPECT_THROW(make_tokenizer("nope", "", ""), std::invalid_argument);
}

}  // namespace
}  // namespace cmpi::data
