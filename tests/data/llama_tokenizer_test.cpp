// Unit tests of the Llama family's tokenizer.json parts on hand-made files:
// Llama 3's pre-tokenizer (pieces pinned to those of the `tokenizers`
// library's Split with the same pattern), bytes that are not UTF-8, the
// character-level (SentencePiece) model with byte fallback and the unknown
// token (pinned to the library's ids, its held-back unknown token
// included), Metaspace, the Prepend and Replace normalizers, the decoder
// steps, the beginning-of-text template, the end-of-document choice, and
// the refusal of each unsupported part naming the file and the field.
// Agreement on trained files is llama_tokenizer_reference_test.cpp's job.
#include <gtest/gtest.h>

#include <random>

#include "data/hf_tokenizer.h"
#include "data/llama3_pretokenizer.h"
#include "data/metaspace_pretokenizer.h"
#include "data/text_normalizer.h"
#include "data/token_string_decoder.h"
#include "data/utf8.h"
#include "tests/data/data_test_util.h"
#include "tests/support/test_seed.h"

namespace cmpi::data {
namespace {

using Ids = std::vector<int32_t>;
using Pieces = std::vector<std::string>;

const std::string kMark = "\xE2\x96\x81";  // U+2581, SentencePiece's space

// `s` as a JSON string literal (the patterns hold backslashes).
std::string quote(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// `text` with the one occurrence of `from` replaced by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

Pieces llama3_pieces(const std::string& text) {
  Llama3PreTokenizer splitter;
  std::vector<std::string_view> views;
  splitter.split(text, views);
  return Pieces(views.begin(), views.end());
}

std::vector<int32_t> encode(Tokenizer& tokenizer, const std::string& text) {
  std::vector<int32_t> ids;
  tokenizer.encode(text, ids);
  return ids;
}

HfTokenizer make(const std::string& json) {
  return HfTokenizer(
      std::make_shared<const HfTokenizerTables>(HfTokenizerFile::parse(json, "tok.json")));
}

void expect_refused(const std::string& json, const std::string& message) {
  try {
    make(json);
    ADD_FAILURE() << "accepted; expected: " << message;
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

// The library's pieces for these texts (Split by the same pattern, Isolated).
TEST(Llama3PreTokenizer, SplitsAsTheLibrary) {
  const std::vector<std::pair<std::string, Pieces>> cases{
      {"'S 'LL I'M \u017F '\u017F x'\u017F",
       {"'S", " '", "LL", " I", "'M", " \u017F", " '", "\u017F", " x", "'\u017F"}},
      {"x'\u017Ftate IT'SELF we'Re", {"x", "'\u017F", "tate", " IT", "'S", "ELF", " we", "'Re"}},
      {"a\n\n  b", {"a", "\n\n", " ", " b"}},
      {" \t\n x", {" \t\n", " x"}},
      {"12345678", {"123", "456", "78"}},
      {"\u0663\u0664\u0665\u0666\u0667", {"\u0663\u0664\u0665", "\u0666\u0667"}},
      {"12,345.6789", {"12", ",", "345", ".", "678", "9"}},
      {"  !!\n\nfoo", {" ", " !!\n\n", "foo"}},
      {"x \r\n\r\n", {"x", " \r\n\r\n"}},
      {"a\rb", {"a", "\r", "b"}},
      {"\t!x", {"\t", "!x"}},
      {"Hello world  \n", {"Hello", " world", "  \n"}},
      {"  ", {"  "}},
      {"\n", {"\n"}},
      {"\U0001F642\U0001F642 ab", {"\U0001F642\U0001F642", " ab"}},
      {"a  \t b\r\n\r\n  c", {"a", "  \t", " b", "\r\n\r\n", " ", " c"}},
      {"$$$ (x) \"q\"!?\n\n", {"$$$", " (", "x", ")", " \"", "q", "\"!?\n\n"}},
  };
  for (const auto& [text, pieces] : cases) EXPECT_EQ(llama3_pieces(text), pieces) << text;
  EXPECT_TRUE(llama3_pieces("").empty());
}

// A byte that is not UTF-8 is cut as U+FFFD (a symbol, [^\s\p{L}\p{N}])
// would be: the pieces of a text with such bytes are those of the text with
// each replaced by U+FFFD, byte for byte elsewhere.
TEST(Llama3PreTokenizer, BytesThatAreNotUtf8CountAsSymbols) {
  const uint64_t seed = cmpi::testing::test_seed();
  SCOPED_TRACE("CMPI_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const std::vector<std::string> atoms{
      "a",        "Z",        "'s",           "'",           " ",
      "\n",       "\r",       "\t",           "1",           "234",
      "!",        "\xC3\xA9", "\xE4\xB8\xAD", "\xFF",        "\x80",
      "\xE2\x82", "\xC3",     "\xF0\x9F\x98", "\xED\xA0\x80" /* surrogate */};
  for (int round = 0; round < 500; ++round) {
    std::string raw;
    for (size_t n = rng() % 12; n > 0; --n) raw += atoms[rng() % atoms.size()];
    // The same text with U+FFFD for each byte decode_utf8 rejects;
    // offset[i] is where raw byte i lands in it.
    std::string substituted;
    std::vector<size_t> offset(raw.size() + 1);
    for (size_t at = 0; at < raw.size();) {
      const DecodedCodePoint d = decode_utf8(raw, at);
      offset[at] = substituted.size();
      substituted += d.code_point == kInvalidCodePoint ? "\xEF\xBF\xBD" : raw.substr(at, d.length);
      at += d.length;
    }
    offset[raw.size()] = substituted.size();
    Pieces mapped;
    size_t start = 0;
    for (const std::string& piece : llama3_pieces(raw)) {
      mapped.push_back(
          substituted.substr(offset[start], offset[start + piece.size()] - offset[start]));
      start += piece.size();
    }
    ASSERT_EQ(start, raw.size());
    ASSERT_EQ(mapped, llama3_pieces(substituted)) << quote(raw);
  }
}

// A byte-level file whose Split carries Llama 3's pattern: digits go in
// threes, and "<|end_of_text|>" ends documents when "<|endoftext|>" is
// absent. Merges: "34" 256, "12" 257, "123" 258, "45" 259.
std::string llama3_json(const std::string& post_processor,
                        const std::string& pattern = kLlama3SplitPattern) {
  const testing::TinyVocabulary tiny = testing::make_tiny_vocabulary({"3 4", "1 2", "12 3", "4 5"});
  const std::string vocab = replaced(tiny.encoder_json, "\"<|endoftext|>\"", "\"<|end_of_text|>\"");
  return R"({"added_tokens": [{"id": 300, "content": "<|begin_of_text|>", "special": true}],
      "normalizer": null, "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": )" +
         quote(pattern) +
         R"(}, "behavior": "Isolated", "invert": false},
        {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]},
      "post_processor": )" +
         post_processor + R"(, "decoder": {"type": "ByteLevel"},
      "model": {"type": "BPE", "ignore_merges": true, "vocab": )" +
         vocab + R"(, "merges": ["3 4", "1 2", "12 3", "4 5"]}})";
}

const char* kBeginOfTextTemplate = R"({"type": "Sequence", "processors": [
    {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
    {"type": "TemplateProcessing",
     "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}}],
     "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
     "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [300],
                                              "tokens": ["<|begin_of_text|>"]}}}]})";

TEST(HfTokenizerLlama3, DigitsInThreesAndABeginningOfTextToken) {
  HfTokenizer tokenizer = make(llama3_json(kBeginOfTextTemplate));
  // GPT-2's pattern would keep "12345" whole and merge "3 4" first.
  EXPECT_EQ(encode(tokenizer, "12345"), (Ids{300, 258, 259}));
  EXPECT_EQ(encode(tokenizer, ""), (Ids{300}));
  const int32_t end = 260;  // the tiny vocabulary's last id, renamed
  EXPECT_EQ(tokenizer.end_of_document(), end);
  // A generation starts from the template's token (an export's bos_token_id).
  EXPECT_EQ(tokenizer.begin_of_document(), 300);
  // An added token in the text is its id; a vocabulary entry is not matched.
  EXPECT_EQ(encode(tokenizer, "1<|begin_of_text|>"), (Ids{300, '1', 300}));
  EXPECT_EQ(encode(tokenizer, "<|end_of_text|>").size(), 1u + 15);
  // Neither the beginning- nor the end-of-text token decodes to text.
  EXPECT_EQ(tokenizer.decode({300, 258, 259, end}), "12345");
  EXPECT_EQ(tokenizer.decode(encode(tokenizer, "x'S 12\xFF")), "x'S 12\xFF");
  HfTokenizer plain = make(llama3_json("null"));
  EXPECT_EQ(encode(plain, "12345"), (Ids{258, 259}));
  EXPECT_EQ(plain.begin_of_document(), end);  // no template: the end-of-document id
}

// SentencePiece's layout: <unk> <s> </s>, the byte tokens <0x00>..<0xFF>
// (ids 3..258), then ▁ 259, a 260, b 261, é 262, ▁a 263, ab 264, ▁ab 265.
std::string sentencepiece_json(const std::string& normalizer, const std::string& pre_tokenizer,
                               const std::string& decoder, const std::string& model_extra = "") {
  std::string vocab = R"({"<unk>": 0, "<s>": 1, "</s>": 2)";
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    vocab += ", \"" + std::string(name) + "\": " + std::to_string(3 + b);
  }
  vocab += ", \"" + kMark + "\": 259, \"a\": 260, \"b\": 261, \"\xC3\xA9\": 262, \"" + kMark +
           "a\": 263, \"ab\": 264, \"" + kMark + "ab\": 265}";
  return R"({"added_tokens": [
        {"id": 0, "content": "<unk>", "special": true, "normalized": false},
        {"id": 1, "content": "<s>", "special": true, "normalized": false},
        {"id": 2, "content": "</s>", "special": true, "normalized": false}],
      "normalizer": )" +
         normalizer + ", \"pre_tokenizer\": " + pre_tokenizer +
         R"(, "post_processor": {"type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                   {"Sequence": {"id": "A", "type_id": 0}}],
        "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
      "decoder": )" +
         decoder + R"(, "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": true,
        "byte_fallback": true, )" +
         model_extra + R"("vocab": )" + vocab + R"(, "merges": [")" + kMark + R"( a", "a b", ")" +
         kMark + R"(a b"]}})";
}

const std::string kLlama2Normalizer = R"({"type": "Sequence", "normalizers": [
    {"type": "Prepend", "prepend": ")" +
                                      kMark + R"("},
    {"type": "Replace", "pattern": {"String": " "}, "content": ")" +
                                      kMark + R"("}]})";
const std::string kLlama2Decoder = R"({"type": "Sequence", "decoders": [
    {"type": "Replace", "pattern": {"String": ")" +
                                   kMark + R"("}, "content": " "},
    {"type": "ByteFallback"}, {"type": "Fuse"},
    {"type": "Strip", "content": " ", "start": 1, "stop": 0}]})";

TEST(HfTokenizerSentencePiece, CharactersBytesAndMerges) {
  HfTokenizer tokenizer = make(sentencepiece_json(kLlama2Normalizer, "null", kLlama2Decoder));
  EXPECT_EQ(tokenizer.end_of_document(), 2);    // </s>
  EXPECT_EQ(tokenizer.begin_of_document(), 1);  // <s>, the template's
  EXPECT_EQ(tokenizer.vocab_size(), 266u);
  // "▁ab▁ab" is one piece: the merges run across the word boundary.
  EXPECT_EQ(encode(tokenizer, "ab ab"), (Ids{1, 265, 265}));
  // € is no token: its bytes E2 82 AC are (3 + byte).
  EXPECT_EQ(encode(tokenizer, "\xC3\xA9\xE2\x82\xAC"), (Ids{1, 259, 262, 229, 133, 175}));
  // A byte that is not UTF-8 is a character of its own: its byte token.
  EXPECT_EQ(encode(tokenizer,
                   "a\xFF"
                   "b"),
            (Ids{1, 263, 258, 261}));
  // Prepend acts per segment between added tokens, as in the library.
  EXPECT_EQ(encode(tokenizer, "ab</s>ab"), (Ids{1, 265, 2, 265}));
  EXPECT_EQ(tokenizer.decode(encode(tokenizer, "ab ab")), "ab ab");
  EXPECT_EQ(tokenizer.decode(encode(tokenizer, "a\xFF\xE2\x82\xAC b")), "a\xFF\xE2\x82\xAC b");
  EXPECT_EQ(tokenizer.decode({1, 263, 2, 259, 0, 261}), "a <unk>b");
}

TEST(HfTokenizerSentencePiece, MetaspacePrependsOnlyAtTheStartWithSchemeFirst) {
  const std::string metaspace = R"({"type": "Metaspace", "replacement": ")" + kMark +
                                R"(", "prepend_scheme": "first", "split": true})";
  HfTokenizer tokenizer = make(sentencepiece_json("null", metaspace, metaspace));
  // "▁ab", "▁ab" (split before each ▁); after </s> no ▁ is put first.
  EXPECT_EQ(encode(tokenizer, "ab ab"), (Ids{1, 265, 265}));
  EXPECT_EQ(encode(tokenizer, "ab</s>ab"), (Ids{1, 265, 2, 264}));
  EXPECT_EQ(encode(tokenizer, "</s>ab"), (Ids{1, 2, 264}));
  // The Metaspace decoder drops the first token's ▁ and spaces the others.
  EXPECT_EQ(tokenizer.decode({265, 265}), "ab ab");
}

// The library holds an unknown token back until the next character that
// has a token, so byte-fallback tokens of later characters come first (and
// with fuse_unk it absorbs later unknown characters). The ids below are the
// library's for a vocabulary with only two byte tokens (é is C3 A9; € is
// E2 82 AC, which has none).
TEST(HfTokenizerSentencePiece, UnknownTokenHeldBackAsTheLibraryDoes) {
  const auto file = [](bool fuse) {
    return std::string(R"({"pre_tokenizer": null, "decoder": null, "model": {"type": "BPE",
        "unk_token": "<unk>", "byte_fallback": true, "fuse_unk": )") +
           (fuse ? "true" : "false") + R"(, "vocab": {"<unk>": 0, "a": 1, "<0xC3>": 2,
        "<0xA9>": 3, "</s>": 4}, "merges": []}})";
  };
  HfTokenizer separate = make(file(false)), fused = make(file(true));
  const std::string euro = "\xE2\x82\xAC", e_acute = "\xC3\xA9";
  EXPECT_EQ(encode(separate, euro + e_acute), (Ids{2, 3, 0}));
  EXPECT_EQ(encode(separate, "a" + euro + e_acute + euro + "a"), (Ids{1, 2, 3, 0, 0, 1}));
  EXPECT_EQ(encode(separate, euro + euro + e_acute + euro), (Ids{0, 2, 3, 0, 0}));
  EXPECT_EQ(encode(fused, "a" + euro + e_acute + euro + "a"), (Ids{1, 2, 3, 0, 1}));
  EXPECT_EQ(encode(fused, euro + euro + e_acute + euro), (Ids{2, 3, 0}));
  EXPECT_EQ(encode(fused, euro + "a"), (Ids{0, 1}));
}

TEST(MetaspacePreTokenizer, SchemesAndSplit) {
  const auto pieces = [](PrependScheme scheme, bool split, const std::string& text, bool first) {
    MetaspaceSettings settings;
    settings.prepend_scheme = scheme;
    settings.split = split;
    MetaspacePreTokenizer metaspace(settings);
    std::vector<std::string_view> views;
    metaspace.split(text, first, views);
    return Pieces(views.begin(), views.end());
  };
  const std::string m = kMark;
  EXPECT_EQ(pieces(PrependScheme::kFirst, true, "Hey  you", true),
            (Pieces{m + "Hey", m, m + "you"}));
  EXPECT_EQ(pieces(PrependScheme::kFirst, true, "Hey", false), (Pieces{"Hey"}));
  EXPECT_EQ(pieces(PrependScheme::kAlways, true, "Hey", false), (Pieces{m + "Hey"}));
  EXPECT_EQ(pieces(PrependScheme::kAlways, true, " x", true), (Pieces{m + "x"}));
  EXPECT_EQ(pieces(PrependScheme::kNever, true, "a b ", true), (Pieces{"a", m + "b", m}));
  EXPECT_EQ(pieces(PrependScheme::kAlways, false, "a b", false), (Pieces{m + "a" + m + "b"}));
}

TEST(TextNormalizer, PrependAndReplaceAfterUnicodeForms) {
  NormalizerStep nfc, prepend, replace;
  prepend.kind = NormalizerStep::Kind::kPrepend;
  prepend.text = kMark;
  replace.kind = NormalizerStep::Kind::kReplace;
  replace.text = " ";
  replace.replacement = kMark;
  const TextNormalizer normalizer({nfc, prepend, replace});
  EXPECT_EQ(normalizer.normalize("cafe\xCC\x81 au lait"),
            kMark + "caf\xC3\xA9" + kMark + "au" + kMark + "lait");
  EXPECT_EQ(normalizer.normalize(""), "");  // Prepend leaves empty text empty
  EXPECT_EQ(normalizer.normalize("\xFF "), kMark + "\xFF" + kMark);
}

TEST(TokenStringDecoder, StepsAsTheLibraryDefinesThem) {
  DecoderStep strip;
  strip.kind = DecoderStep::Kind::kStrip;
  strip.from = " ";
  strip.start = 2;
  strip.stop = 1;
  EXPECT_EQ(decode_token_strings({"   a  ", " b"}, {strip}), " a b");
  DecoderStep metaspace;
  metaspace.kind = DecoderStep::Kind::kMetaspace;
  // Every ▁ of the first token goes, unless prepend_scheme is never.
  EXPECT_EQ(decode_token_strings({kMark + kMark + "a", kMark + "b"}, {metaspace}), "a b");
  metaspace.metaspace.prepend_scheme = PrependScheme::kNever;
  EXPECT_EQ(decode_token_strings({kMark + "a", kMark + "b"}, {metaspace}), " a b");
  DecoderStep fallback;
  fallback.kind = DecoderStep::Kind::kByteFallback;
  // Bytes stay bytes, valid UTF-8 or not (the library writes U+FFFD).
  EXPECT_EQ(decode_token_strings({"<0xE2>", "<0x82>", "x", "<0xff>", "<0xZZ>"}, {fallback}),
            "\xE2\x82x\xFF<0xZZ>");
  EXPECT_EQ(decode_token_strings({"a", "b"}, {}), "ab");
}

TEST(HfTokenizerFile, RefusesUnsupportedLlamaPartsNamingTheField) {
  const std::string json = llama3_json("null", "\\s+");
  expect_refused(
      json,
      "tok.json: pre_tokenizer.pretokenizers[0].pattern: only GPT-2's pattern {\"Regex\": "
      "\"'s|'t|");
  expect_refused(json, "or Llama 3's {\"Regex\": \"(?i:'s|");
  expect_refused(json, "is supported, found '\\s+'");

  const auto sentencepiece = [](const std::string& normalizer, const std::string& pre,
                                const std::string& decoder) {
    return sentencepiece_json(normalizer, pre, decoder);
  };
  expect_refused(sentencepiece(R"({"type": "Replace", "pattern": {"Regex": " +"}, "content": "x"})",
                               "null", "null"),
                 "tok.json: normalizer.pattern: only a {\"String\": ...} pattern is supported");
  expect_refused(
      sentencepiece(R"({"type": "Sequence", "normalizers": [{"type": "Strip"}]})", "null", "null"),
      "tok.json: normalizer.normalizers[0].type: 'Strip' is not supported");
  expect_refused(sentencepiece("null", R"({"type": "Metaspace", "replacement": "_",
                                          "prepend_scheme": "sometimes"})",
                               "null"),
                 "tok.json: pre_tokenizer.prepend_scheme: 'sometimes' is not one of always, "
                 "first, never");
  expect_refused(sentencepiece("null", R"({"type": "Metaspace", "replacement": "__"})", "null"),
                 "tok.json: pre_tokenizer.replacement: '__': expected one character");
  expect_refused(sentencepiece("null", R"({"type": "Whitespace"})", "null"),
                 "tok.json: pre_tokenizer.type: 'Whitespace' is not supported");
  expect_refused(sentencepiece("null", "null", R"({"type": "CTC"})"),
                 "tok.json: decoder.type: 'CTC' is not supported");
  expect_refused(sentencepiece("null", "null",
                               R"({"type": "Sequence", "decoders": [{"type": "Fuse"},
                                   {"type": "ByteLevel"}]})"),
                 "tok.json: decoder.decoders[0].type: 'Fuse' is not supported together with "
                 "the ByteLevel decoder at decoder.decoders[1]");
  expect_refused(sentencepiece("null", "null", R"({"type": "Strip", "content": "ab",
                                                  "start": 1, "stop": 0})"),
                 "tok.json: decoder.content: 'ab': expected one character");
  // A character-level decoder after a byte-level pre-tokenizer.
  expect_refused(replaced(llama3_json("null"), R"("decoder": {"type": "ByteLevel"})",
                          R"("decoder": {"type": "Fuse"})"),
                 "tok.json: decoder.type: 'Fuse' is not supported with a ByteLevel "
                 "pre-tokenizer");

  // Templates that add ids after the text or name tokens they do not list.
  const std::string eos_template =
      replaced(kBeginOfTextTemplate, R"({"Sequence": {"id": "A", "type_id": 0}}],)",
               R"({"Sequence": {"id": "A", "type_id": 0}},
                  {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}],)");
  expect_refused(llama3_json(eos_template),
                 "tok.json: post_processor.processors[1].type: 'TemplateProcessing' is not "
                 "supported (it would add or change ids) except as special tokens then $A");
  expect_refused(llama3_json(eos_template),
                 "(post_processor.processors[1].single[2]: '<|begin_of_text|>' after the text;");
  expect_refused(
      llama3_json(replaced(kBeginOfTextTemplate, "\"special_tokens\": {\"<|begin_of_text|>\"",
                           "\"special_tokens\": {\"<|other|>\"")),
      "tok.json: post_processor.processors[1].special_tokens.'<|begin_of_text|>': "
      "missing (named by post_processor.processors[1].single[0])");
  expect_refused(
      llama3_json(replaced(kBeginOfTextTemplate, "[300]", "[999]")),
      "tok.json: post_processor.processors[1].special_tokens.'<|begin_of_text|>'.ids[0]: "
      "999 is neither in model.vocab nor an added token");
  expect_refused(llama3_json(R"({"type": "RobertaProcessing"})"),
                 "tok.json: post_processor.type: 'RobertaProcessing' is not supported");

  // A character-level model that would drop characters it has no token for.
  const std::string no_fallback = replaced(sentencepiece("null", "null", "null"),
                                           "\"byte_fallback\": true", "\"byte_fallback\": false");
  expect_refused(replaced(no_fallback, "\"unk_token\": \"<unk>\"", "\"unk_token\": null"),
                 "tok.json: model.unk_token: missing: a character outside model.vocab would be "
                 "dropped");
  expect_refused(replaced(no_fallback, "\"unk_token\": \"<unk>\"", "\"unk_token\": \"<?>\""),
                 "tok.json: model.unk_token: '<?>' is not in model.vocab");
  const std::string no_end =
      replaced(replaced(sentencepiece("null", "null", "null"), "\"</s>\": 2", "\"<end>\": 2"),
               "\"content\": \"</s>\"", "\"content\": \"<end>\"");
  expect_refused(no_end, "tok.json: added_tokens: no '<|endoftext|>', '<|end_of_text|>' or '</s>'");
}

}  // namespace
}  // namespace cmpi::data
