// cmpi-data end to end: the executable is run on small JSONL and text inputs
// and the dataset it writes is read back; each document must hold exactly the
// tokenizer's ids of its text followed by the end-of-document id, in input
// order even with several workers. Bad JSONL must fail naming file and line
// and leave no dataset behind.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <random>

#include "data/byte_tokenizer.h"
#include "data/gpt2_tokenizer.h"
#include "data/hf_tokenizer.h"
#include "data/indexed_dataset.h"
#include "tests/data/data_test_util.h"
#include "tests/support/test_seed.h"

namespace cmpi::data {
namespace {

using testing::read_bytes;
using testing::ScratchDir;
using testing::write_bytes;

// Runs cmpi-data with `args`; returns its exit status, stderr in `log`.
int run_tool(const ScratchDir& dir, const std::string& args, std::string& log) {
  const std::string log_path = dir.path("stderr.log");
  const std::string command = std::string(CMPI_DATA_TOOL) + " " + args + " 2> " + log_path;
  const int status = std::system(command.c_str());
  log = read_bytes(log_path);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void expect_documents(const std::string& prefix, Tokenizer& tokenizer,
                      const std::vector<std::string>& texts) {
  const IndexedDataset dataset(prefix);
  ASSERT_EQ(dataset.documents(), texts.size());
  std::vector<int32_t> tokens;
  for (size_t d = 0; d < texts.size(); ++d) {
    ASSERT_EQ(dataset.document_end(d) - dataset.document_begin(d), 1u);
    dataset.copy_sequence(dataset.document_begin(d), tokens);
    std::vector<int32_t> expected;
    tokenizer.encode(texts[d], expected);
    expected.push_back(tokenizer.end_of_document());
    ASSERT_EQ(tokens, expected) << "document " << d;
  }
}

std::string json_escape(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += c;
    }
  }
  return out;
}

TEST(CmpiDataTool, JsonlWithGpt2TokenizerAndSeveralWorkers) {
  const uint64_t seed = cmpi::testing::test_seed();
  SCOPED_TRACE("CMPI_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  ScratchDir dir;
  const testing::TinyVocabulary tiny = testing::make_tiny_vocabulary({"Ġ t", "h e", "Ġt he"});
  write_bytes(dir.path("encoder.json"), tiny.encoder_json);
  write_bytes(dir.path("vocab.bpe"), tiny.merges_text);
  // Enough documents for several batches, so order across workers matters.
  const std::vector<std::string> words{"the", " the", "héllo", "\n", "  ", "'s", "42", "!?"};
  std::vector<std::string> texts(9000);
  std::string jsonl;
  for (std::string& text : texts) {
    for (size_t n = rng() % 60; n > 0; --n) text += words[rng() % words.size()];
    jsonl += "{\"id\": 1, \"text\": \"" + json_escape(text) + "\"}\n";
    if (rng() % 50 == 0) jsonl += "\n";  // blank lines are skipped
  }
  write_bytes(dir.path("in.jsonl"), jsonl);
  std::string log;
  ASSERT_EQ(run_tool(dir,
                     "--input " + dir.path("in.jsonl") + " --output-prefix " + dir.path("out") +
                         " --tokenizer gpt2 --vocab-file " + dir.path("encoder.json") +
                         " --merge-file " + dir.path("vocab.bpe") + " --workers 3 --verify",
                     log),
            0)
      << log;
  EXPECT_NE(log.find("tokens/s"), std::string::npos) << log;
  Gpt2Tokenizer tokenizer(std::make_shared<const Gpt2Vocabulary>(
      Gpt2Vocabulary::load(dir.path("encoder.json"), dir.path("vocab.bpe"))));
  expect_documents(dir.path("out"), tokenizer, texts);
}

// A tokenizer.json of the tiny vocabulary; `normalizer` is its JSON.
std::string tiny_tokenizer_json(const std::string& normalizer) {
  const testing::TinyVocabulary tiny = testing::make_tiny_vocabulary({"Ġ t", "h e", "Ġt he"});
  return R"({"added_tokens": [{"id": 259, "content": "<|endoftext|>", "special": true}],
             "normalizer": )" +
         normalizer + R"(, "pre_tokenizer": {"type": "ByteLevel"}, "post_processor": null,
             "decoder": {"type": "ByteLevel"}, "model": {"type": "BPE", "vocab": )" +
         tiny.encoder_json + R"(, "merges": ["Ġ t", ["h", "e"], "Ġt he"]}})";
}

TEST(CmpiDataTool, JsonlWithTokenizerJson) {
  ScratchDir dir;
  write_bytes(dir.path("tokenizer.json"), tiny_tokenizer_json(R"({"type": "NFC"})"));
  const std::vector<std::string> texts{"the the", "cafe\xCC\x81 <|endoftext|> the", ""};
  std::string jsonl;
  for (const std::string& text : texts) jsonl += "{\"text\": \"" + json_escape(text) + "\"}\n";
  write_bytes(dir.path("in.jsonl"), jsonl);
  std::string log;
  ASSERT_EQ(run_tool(dir,
                     "--input " + dir.path("in.jsonl") + " --output-prefix " + dir.path("out") +
                         " --tokenizer " + dir.path("tokenizer.json") + " --workers 2 --verify",
                     log),
            0)
      << log;
  const auto tokenizer = HfTokenizer::load(dir.path("tokenizer.json"));
  expect_documents(dir.path("out"), *tokenizer, texts);
  // The second document: NFC "é", and "<|endoftext|>" is the special token.
  std::vector<int32_t> ids;
  tokenizer->encode(texts[1], ids);
  EXPECT_EQ(ids, (std::vector<int32_t>{'c', 'a', 'f', 0xC3, 0xA9, ' ', 259, 258}));
}

TEST(CmpiDataTool, UnsupportedTokenizerJsonNamesFileAndField) {
  ScratchDir dir;
  write_bytes(dir.path("tokenizer.json"), tiny_tokenizer_json(R"({"type": "Lowercase"})"));
  write_bytes(dir.path("in.txt"), "text");
  std::string log;
  EXPECT_EQ(run_tool(dir,
                     "--input " + dir.path("in.txt") + " --output-prefix " + dir.path("out") +
                         " --tokenizer " + dir.path("tokenizer.json"),
                     log),
            1);
  EXPECT_NE(
      log.find(dir.path("tokenizer.json") + ": normalizer.type: 'Lowercase' is not supported"),
      std::string::npos)
      << log;
  EXPECT_FALSE(std::filesystem::exists(dir.path("out.bin")));
}

TEST(CmpiDataTool, TextFilesWithByteTokenizer) {
  ScratchDir dir;
  const std::string first = "First file.\n\nStill the first document.\n";
  const std::string second = "Zweite Datei: ß, 中文.";
  write_bytes(dir.path("a.txt"), first);
  write_bytes(dir.path("b.txt"), second);
  std::string log;
  ASSERT_EQ(run_tool(dir,
                     "--input " + dir.path("a.txt") + " --input " + dir.path("b.txt") +
                         " --output-prefix " + dir.path("out") + " --tokenizer bytes --quiet",
                     log),
            0)
      << log;
  ByteTokenizer tokenizer;
  expect_documents(dir.path("out"), tokenizer, {first, second});
  EXPECT_EQ(IndexedDataset(dir.path("out")).dtype(), TokenDtype::kUInt16);

  ASSERT_EQ(
      run_tool(dir,
               "--input " + dir.path("a.txt") + " --text-documents paragraphs" +
                   " --dtype int32 --output-prefix " + dir.path("para") + " --tokenizer bytes",
               log),
      0)
      << log;
  expect_documents(dir.path("para"), tokenizer, {"First file.\n", "Still the first document.\n"});
  EXPECT_EQ(IndexedDataset(dir.path("para")).dtype(), TokenDtype::kInt32);
}

void expect_bad_jsonl(const std::string& third_line, const std::string& message) {
  ScratchDir dir;
  write_bytes(dir.path("bad.jsonl"),
              "{\"text\": \"ok\"}\n\n" + third_line + "\n{\"text\": \"x\"}\n");
  std::string log;
  EXPECT_EQ(run_tool(dir,
                     "--input " + dir.path("bad.jsonl") + " --output-prefix " + dir.path("out") +
                         " --tokenizer bytes",
                     log),
            1);
  EXPECT_NE(log.find(dir.path("bad.jsonl") + ":3: " + message), std::string::npos) << log;
  EXPECT_FALSE(std::filesystem::exists(dir.path("out.bin")));
  EXPECT_FALSE(std::filesystem::exists(dir.path("out.idx")));
  EXPECT_FALSE(std::filesystem::exists(dir.path("out.bin.tmp")));
}

TEST(CmpiDataTool, BadJsonlNamesFileAndLine) {
  expect_bad_jsonl("this is not json", "not a JSON object");
  expect_bad_jsonl("{\"title\": \"no text\"}", "no \"text\" field");
  expect_bad_jsonl("{\"text\": 12}", "\"text\" is not a string");
}

TEST(CmpiDataTool, UsageErrors) {
  ScratchDir dir;
  std::string log;
  EXPECT_EQ(run_tool(dir, "--tokenizer bytes", log), 2);
  EXPECT_NE(log.find("no --input"), std::string::npos) << log;
  EXPECT_EQ(run_tool(dir, "--input x --output-prefix y --tokenizer gpt2", log), 1);
  EXPECT_NE(log.find("--vocab-file"), std::string::npos) << log;
  EXPECT_EQ(
      run_tool(dir,
               "--input /nonexistent.txt --output-prefix " + dir.path("o") + " --tokenizer bytes",
               log),
      1);
  EXPECT_NE(log.find("/nonexistent.txt: cannot open"), std::string::npos) << log;
}

}  // namespace
}  // namespace cmpi::data
