// tokenizer.json unit tests on a tiny hand-made vocabulary: both merge
// spellings, Hugging Face's merge order, ignore_merges, added tokens
// (leftmost-longest, lstrip/rstrip, special tokens in text), NFC, bytes that
// are not UTF-8, and the refusal of each unsupported part naming the file
// and the field. Agreement with Hugging Face's own implementation on GPT-2's
// vocabulary is hf_tokenizer_reference_test.cpp's job.
#include <gtest/gtest.h>

#include <random>

#include "data/added_token_splitter.h"
#include "data/hf_tokenizer.h"
#include "data/hf_tokenizer_file.h"
#include "data/unicode_normalizer.h"
#include "tests/data/data_test_util.h"
#include "tests/support/test_seed.h"

namespace cmpi::data {
namespace {

// The parts of a tokenizer.json a test changes; the rest is GPT-2's layout.
struct Parts {
  std::vector<std::string> merges;  // "a b"
  bool pair_merges = false;
  std::string added_tokens = "[]";
  std::string normalizer = "null";
  std::string pre_tokenizer = R"({"type": "ByteLevel", "add_prefix_space": false})";
  std::string post_processor = R"({"type": "ByteLevel"})";
  std::string decoder = R"({"type": "ByteLevel"})";
  std::string model_extra;  // more "key": value members of "model"
  std::string top_extra;    // more top-level members
};

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// The tiny vocabulary: bytes 0..255, one id per merge from 256, then
// <|endoftext|>.
std::string tokenizer_json(const Parts& p) {
  const testing::TinyVocabulary tiny = testing::make_tiny_vocabulary(p.merges);
  std::string merges;
  for (const std::string& m : p.merges) {
    const size_t space = m.find(' ');
    merges +=
        (merges.empty() ? "" : ", ") +
        (p.pair_merges ? "[" + quote(m.substr(0, space)) + ", " + quote(m.substr(space + 1)) + "]"
                       : quote(m));
  }
  return "{\"version\": \"1.0\", \"truncation\": null, \"padding\": null, " + p.top_extra +
         "\"added_tokens\": " + p.added_tokens + ", \"normalizer\": " + p.normalizer +
         ", \"pre_tokenizer\": " + p.pre_tokenizer + ", \"post_processor\": " + p.post_processor +
         ", \"decoder\": " + p.decoder + ", \"model\": {\"type\": \"BPE\", " + p.model_extra +
         "\"vocab\": " + tiny.encoder_json + ", \"merges\": [" + merges + "]}}";
}

HfTokenizer make(const Parts& p) {
  return HfTokenizer(std::make_shared<const HfTokenizerTables>(
      HfTokenizerFile::parse(tokenizer_json(p), "tok.json")));
}

std::vector<int32_t> encode(Tokenizer& tokenizer, const std::string& text) {
  std::vector<int32_t> ids;
  tokenizer.encode(text, ids);
  return ids;
}

// Parsing `p` fails with a message containing `message`.
void expect_refused(const Parts& p, const std::string& message) {
  try {
    make(p);
    ADD_FAILURE() << "accepted; expected: " << message;
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

using Ids = std::vector<int32_t>;

TEST(HfTokenizer, BothMergeSpellingsGiveTheSameIds) {
  Parts p;
  p.merges = {"Ġ t", "h e", "Ġt he"};  // ids 256, 257, 258; file eot 259
  HfTokenizer strings = make(p);
  p.pair_merges = true;
  HfTokenizer pairs = make(p);
  for (const char* text : {"the the", " the", "hethe t"}) {
    EXPECT_EQ(encode(strings, text), encode(pairs, text)) << text;
  }
  EXPECT_EQ(encode(strings, "the the"), (Ids{'t', 257, 258}));
  EXPECT_EQ(strings.end_of_document(), 259);  // from the vocabulary
  EXPECT_EQ(strings.vocab_size(), 260u);
  EXPECT_EQ(strings.decode({'t', 257, 258, 259}), "the the");
}

// Hugging Face merges the leftmost lowest-ranked pair and looks again, so a
// merge that ranks below the one that made its part goes next; GPT-2's
// encoder.py would merge both "a b" first ("ab ab").
TEST(HfTokenizer, MergesInHuggingFaceOrder) {
  Parts p;
  p.merges = {"ab a", "a b"};  // "aba" = 256 (rank 0), "ab" = 257 (rank 1)
  HfTokenizer tokenizer = make(p);
  EXPECT_EQ(encode(tokenizer, "abab"), (Ids{256, 'b'}));
}

TEST(HfTokenizer, IgnoreMergesTakesWholeVocabularyWords) {
  Parts p;
  p.merges = {"a b", "b c", "a bc"};  // "ab" 256, "bc" 257, "abc" 258
  // Without ignore_merges "abc" is a, b, c -> ab c ("a b" ranks first)... and
  // "ab c" is not a merge, so it stays two tokens.
  EXPECT_EQ(encode(*std::make_unique<HfTokenizer>(make(p)), "abc"), (Ids{256, 'c'}));
  p.model_extra = R"("ignore_merges": true, )";
  HfTokenizer ignoring = make(p);
  EXPECT_EQ(encode(ignoring, "abc"), (Ids{258}));
  EXPECT_EQ(encode(ignoring, "abcb"), (Ids{256, 'c', 'b'}));  // not a word: merges as usual
}

TEST(HfTokenizer, AddedTokensSplitTheTextFirst) {
  Parts p;
  p.merges = {"Ġ t", "h e", "Ġt he"};
  p.added_tokens = R"([
    {"id": 259, "content": "<|endoftext|>", "special": true, "normalized": false},
    {"id": 300, "content": "<m>", "special": true, "normalized": false, "lstrip": true},
    {"id": 301, "content": "<m>>", "special": false, "normalized": false},
    {"id": 302, "content": "[s]", "special": true, "normalized": false, "rstrip": true},
    {"id": 303, "content": "  ", "special": false, "normalized": true}])";
  HfTokenizer tokenizer = make(p);
  EXPECT_EQ(tokenizer.vocab_size(), 304u);
  EXPECT_EQ(tokenizer.end_of_document(), 259);
  // Special tokens in the text are matched, as Hugging Face's encode does.
  EXPECT_EQ(encode(tokenizer, "the<|endoftext|>the"), (Ids{'t', 257, 259, 't', 257}));
  // Longest match wins; lstrip drops the spaces before "<m>".
  EXPECT_EQ(encode(tokenizer, "x <m>>y  <m>z"), (Ids{'x', ' ', 301, 'y', 300, 'z'}));
  // rstrip drops the spaces after "[s]"; a run of two spaces is a token.
  EXPECT_EQ(encode(tokenizer, "[s]   the  x"), (Ids{302, 't', 257, 303, 'x'}));
  // lstrip stops at the previous match.
  EXPECT_EQ(encode(tokenizer, "[s] <m>"), (Ids{302, 300}));
  EXPECT_EQ(tokenizer.decode({302, 't', 300, 259}), "[s]t<m>");
}

TEST(AddedTokenSplitter, LeftmostLongestAndStripsStayBetweenNeighbours) {
  AddedTokenSplitter splitter({{"ab", 1, false, false},
                               {"abc", 2, false, false},
                               {"bcd", 3, false, false},
                               {"X", 4, true, true}});
  std::vector<TextSegment> out;
  splitter.split("zabcd \xC2\xA0X\t bcd", out);
  // "abc" starts first and is longest there, so "bcd" cannot overlap it;
  // X takes the NBSP and space before it and the tab and space after it.
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[0].text, "z");
  EXPECT_EQ(out[0].token_id, -1);
  EXPECT_EQ(out[1].token_id, 2);
  EXPECT_EQ(out[2].text, "d");
  EXPECT_EQ(out[3].token_id, 4);
  EXPECT_EQ(out[3].text, " \xC2\xA0X\t ");
  EXPECT_EQ(out[4].token_id, 3);
}

TEST(HfTokenizer, NormalizesToNfcAndKeepsBytesThatAreNotUtf8) {
  Parts p;
  p.normalizer = R"({"type": "Sequence", "normalizers": [{"type": "NFC"}]})";
  HfTokenizer tokenizer = make(p);
  // "e" + U+0301 becomes U+00E9 (bytes C3 A9); the stray 0xFF byte stays.
  EXPECT_EQ(encode(tokenizer, "e\xCC\x81\xFF"), (Ids{0xC3, 0xA9, 0xFF}));
  EXPECT_EQ(UnicodeNormalizer({UnicodeNormalForm::kNfkc}).normalize("\xEF\xAC\x81\x80x"),
            "fi\x80x");  // U+FB01 "ﬁ" -> "fi"
  // Random bytes survive a round trip when nothing normalizes them away.
  const uint64_t seed = cmpi::testing::test_seed();
  SCOPED_TRACE("CMPI_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  HfTokenizer plain = make(Parts{});
  for (int round = 0; round < 50; ++round) {
    std::string text(rng() % 100, '\0');
    for (char& c : text) c = char(rng());
    if (text.find("<|endoftext|>") != std::string::npos) continue;
    ASSERT_EQ(plain.decode(encode(plain, text)), text);
  }
}

TEST(HfTokenizer, AddPrefixSpaceAndNoRegex) {
  Parts p;
  p.merges = {"Ġ t", "h e", "Ġt he"};
  p.pre_tokenizer = R"({"type": "ByteLevel", "add_prefix_space": true, "use_regex": false})";
  HfTokenizer tokenizer = make(p);
  // One piece, so "Ġt he" applies across the would-be word boundary too.
  EXPECT_EQ(encode(tokenizer, "the the"), (Ids{258, 258}));
  EXPECT_EQ(encode(tokenizer, " the"), (Ids{258}));
}

TEST(HfTokenizerFile, RefusesUnsupportedPartsNamingFileAndField) {
  Parts p;
  p.model_extra = R"("dropout": 0.1, )";
  expect_refused(p, "tok.json: model.dropout: BPE dropout 0.1");
  p = Parts{};
  p.model_extra = R"("continuing_subword_prefix": "##", )";
  expect_refused(p, "tok.json: model.continuing_subword_prefix: '##' is not supported");
  p = Parts{};
  p.model_extra = R"("mystery": 1, )";
  expect_refused(p, "tok.json: model.mystery: is not a setting this reader knows");
  p = Parts{};
  p.normalizer = R"({"type": "Lowercase"})";
  expect_refused(p, "tok.json: normalizer.type: 'Lowercase' is not supported");
  p.normalizer = R"({"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Strip"}]})";
  expect_refused(p, "tok.json: normalizer.normalizers[1].type: 'Strip' is not supported");
  p = Parts{};
  p.pre_tokenizer = R"({"type": "Metaspace"})";
  expect_refused(p, "tok.json: pre_tokenizer.type: 'Metaspace' is not supported");
  p.pre_tokenizer =
      R"({"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "\\s+"},
          "behavior": "Isolated", "invert": false}, {"type": "ByteLevel", "use_regex": false}]})";
  expect_refused(p, "tok.json: pre_tokenizer.pretokenizers[0].pattern: only GPT-2's pattern");
  p.pre_tokenizer = "null";
  expect_refused(p, "tok.json: pre_tokenizer: missing");
  p = Parts{};
  p.post_processor = R"({"type": "TemplateProcessing", "single": []})";
  expect_refused(p,
                 "tok.json: post_processor.type: 'TemplateProcessing' is not supported (it "
                 "would add or change ids");
  p = Parts{};
  p.decoder = R"({"type": "WordPiece"})";
  expect_refused(p, "tok.json: decoder.type: 'WordPiece' is not supported");
  p = Parts{};
  p.added_tokens = R"([{"id": 256, "content": "<|endoftext|>", "single_word": true}])";
  expect_refused(p, "tok.json: added_tokens[0].single_word: true is not supported");
  p.added_tokens = R"([{"id": 0, "content": "<|endoftext|>"}])";
  expect_refused(p, "tok.json: added_tokens[0].id: 0 is model.vocab's 'Ā'");
  p = Parts{};
  p.model_extra = R"("unk_token": "<unk>", )";
  p.merges = {"a b"};
  EXPECT_NO_THROW(make(p));  // <|endoftext|> is still in the vocabulary
  p.merges = {"a b", "ab zz"};
  expect_refused(p, "tok.json: model.merges[1]: 'zz' is not in model.vocab");
  p = Parts{};
  p.top_extra = R"("truncation": {"max_length": 8}, )";
  expect_refused(p, "tok.json: truncation: must be null");
}

TEST(HfTokenizerFile, RefusesOtherModelsAndMalformedFiles) {
  const auto refused = [](const std::string& json, const std::string& message) {
    try {
      HfTokenizerFile::parse(json, "t.json");
      ADD_FAILURE() << "accepted; expected: " << message;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  refused(R"({"model": {"type": "WordPiece", "vocab": {}}})",
          "t.json: model.type: 'WordPiece' is not supported");
  refused(R"({"model": {"type": "Unigram", "vocab": []}})",
          "t.json: model.type: 'Unigram' is not supported");
  refused(R"({"model": {"type": "BPE", "vocab": {}, "merges": ["a b c"]}})",
          "t.json: model.merges[0]: 'a b c': expected two tokens");
  refused(R"({"model": {"type": "BPE", "vocab": {"a": 1.5}, "merges": []}})",
          "t.json: model.vocab.'a': expected an integer");
  refused(R"({"model": {"type": "BPE", "vocab": {}, "merges": [["a"]]}})",
          "t.json: model.merges[0]: expected a pair");
  refused(R"({"model": )", "t.json: ");
  refused(R"([1, 2])", "t.json: (top level): expected a tokenizer.json object");
  // A vocabulary without byte tokens, or without <|endoftext|>.
  try {
    HfTokenizerTables(HfTokenizerFile::parse(
        R"({"pre_tokenizer": {"type": "ByteLevel"}, "model": {"type": "BPE", "vocab": {"a": 0},
            "merges": []}})",
        "t.json"));
    ADD_FAILURE() << "accepted a vocabulary without byte tokens";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("t.json: model.vocab: no token for byte 0"),
              std::string::npos)
        << e.what();
  }
  std::string json = tokenizer_json(Parts{});
  json.replace(json.find("\"<|endoftext|>\""), 15, "\"<|end|>\"");
  try {
    HfTokenizerTables(HfTokenizerFile::parse(json, "t.json"));
    ADD_FAILURE() << "accepted a file without <|endoftext|>";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("t.json: added_tokens: no '<|endoftext|>'"),
              std::string::npos)
        << e.what();
  }
}

TEST(HfTokenizer, MakeTokenizerTakesAJsonPath) {
  testing::ScratchDir dir;
  testing::write_bytes(dir.path("tokenizer.json"), tokenizer_json(Parts{}));
  const auto tokenizer = make_tokenizer(dir.path("tokenizer.json"), "", "");
  EXPECT_EQ(tokenizer->name(), dir.path("tokenizer.json"));
  EXPECT_EQ(tokenizer->clone()->vocab_size(), 257u);
  EXPECT_THROW(make_tokenizer(dir.path("tokenizer.json"), "encoder.json", ""),
               std::invalid_argument);
  EXPECT_THROW(make_tokenizer(dir.path("missing.json"), "", ""), std::runtime_error);
}

}  // namespace
}  // namespace cmpi::data
