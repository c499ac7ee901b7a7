// The data and eval keys: indexed datasets (one prefix or a weighted list),
// the train/valid split, the sample-index cache directory and the validation
// loss schedule load as written, round-trip through to_yaml, and every
// inconsistent setting is refused at the key that causes it.
#include <string>

#include <gtest/gtest.h>

#include "config/config_loader.h"
#include "data/byte_to_unicode.h"
#include "tests/config/config_test_support.h"

namespace cmpi::config {
namespace {

using namespace config_testing;

TEST_F(ConfigTest, IndexedDataKeysLoadAndRoundTrip) {
  const std::string text =
      "data:\n  kind: indexed\n  paths: [a/b, \"c d/e\"]\n  weights: [3, 1]\n"
      "  split: [0.9, 0.1]\n  cache_dir: /tmp/x\n  seed: 7\neval:\n  every: 5\n  batches: 2\n";
  const Config c = load_checked_config(write(text));
  EXPECT_STREQ(config::name_of(c.data.kind), "indexed");
  EXPECT_EQ(c.data.paths, (std::vector<std::string>{"a/b", "c d/e"}));
  EXPECT_EQ(c.data.weights, (std::vector<double>{3, 1}));
  EXPECT_EQ(c.data.split, (std::vector<double>{0.9, 0.1}));
  EXPECT_EQ(c.data.cache_dir, "/tmp/x");
  EXPECT_EQ(c.eval.every, 5);
  EXPECT_EQ(c.eval.batches, 2);

  const Config again = parse_checked_config(to_yaml(c), "resolved.yaml");
  EXPECT_EQ(again.data.paths, c.data.paths);
  EXPECT_EQ(again.data.weights, c.data.weights);
  EXPECT_EQ(again.data.split, c.data.split);
  EXPECT_EQ(again.data.cache_dir, c.data.cache_dir);
  EXPECT_EQ(again.eval.every, c.eval.every);
  EXPECT_EQ(again.eval.batches, c.eval.batches);
  const auto body = [](const std::string& yaml) { return yaml.substr(yaml.find('\n')); };
  EXPECT_EQ(body(to_yaml(again)), body(to_yaml(c))) << "only the source comment differs";

  const Config one = load_checked_config(write("data:\n  kind: indexed\n  paths: corpus/kjv\n"));
  EXPECT_EQ(one.data.paths, std::vector<std::string>{"corpus/kjv"});
  EXPECT_TRUE(one.data.weights.empty());
  EXPECT_EQ(one.data.split, (std::vector<double>{0.98, 0.02}));
  EXPECT_EQ(one.eval.every, 0) << "no evaluation unless asked for";
  const Config markov = load_checked_config(write("{}"));
  EXPECT_EQ(parse_checked_config(to_yaml(markov), "r.yaml").data.paths.size(), 0u);
}

TEST_F(ConfigTest, InconsistentDataKeysAreRefusedAtTheirKey) {
  expect_error_at("data:\n  kind: indexed\n", "kind", "data.paths", "needs a dataset prefix");
  expect_error_at("data:\n  paths: x\n", "paths", "data.paths", "only with data.kind: indexed");
  expect_error_at("data:\n  kind: indexed\n  paths: [x, y]\n  weights: [1]\n", "weights",
                  "data.weights", "one weight per entry of data.paths (2), got 1");
  expect_error_at("data:\n  kind: indexed\n  paths: [x]\n  weights: [0]\n", "weights",
                  "data.weights", "must not all be 0");
  expect_error_at("data:\n  kind: indexed\n  paths: x\n  split: [0.9, 0.05, 0.05]\n", "split",
                  "data.split", "train and valid shares");
  expect_error_at("data:\n  kind: indexed\n  paths: x\n  split: [0, 1]\n", "split", "data.split",
                  "train share (first item) must be > 0");
  expect_error_at("data:\n  kind: indexed\n  paths: x\n  split: [1, -0.5]\n", "split", "data.split",
                  "every item must be a number >= 0, got '-0.5'");
  expect_error_at("data:\n  kind: indexed\n  paths: [x, {a: 1}]\n", "paths", "data.paths",
                  "every item must be a non-empty path");
  expect_error_at("data:\n  kind: indexed\n  paths: x\n  split: [1, 0]\neval:\n  every: 10\n",
                  "split", "data.split", "no documents are held out");
  expect_error_at("parallel:\n  zero3_gather: shard\n", "shard", "parallel.zero3_gather", "layer");
  expect_error_at("parallel:\n  zero_gradient_memory: half\n", "half",
                  "parallel.zero_gradient_memory", "full_buffer");
  expect_error_at("parallel:\n  zero_stage: 1\n  zero_gradient_memory: shard\n",
                  "zero_gradient_memory", "parallel.zero_gradient_memory",
                  "needs parallel.zero_stage 2 or 3, got 1");
  expect_error_at("data:\n  kind: sqlite\n", "sqlite", "data.kind", "indexed");
  expect_error_at("eval:\n  batches: 0\n", "batches", "eval.batches", "");
}

// data.tokenizer: a tokenizer.json whose 257 ids (256 bytes and
// <|endoftext|>) must fit model.vocab_size; a file it cannot use is refused at
// data.tokenizer with the file's own error.
TEST_F(ConfigTest, DataTokenizerMustFitTheVocabulary) {
  const data::ByteToUnicode bytes;
  std::string vocab = "{";
  for (int b = 0; b < 256; ++b) {
    std::string token = bytes.utf8(uint8_t(b));
    if (token == "\"" || token == "\\") token = "\\" + token;
    vocab += "\"" + token + "\": " + std::to_string(b) + ", ";
  }
  vocab += "\"<|endoftext|>\": 256}";
  const std::string tokenizer =
      write(R"({"pre_tokenizer": {"type": "ByteLevel"}, "model": {"type": "BPE", "vocab": )" +
                vocab + R"(, "merges": []}})",
            "tokenizer.json");
  const Config c = load_checked_config(
      write("model:\n  vocab_size: 257\ndata:\n  tokenizer: " + tokenizer + "\n"));
  EXPECT_EQ(c.data.tokenizer, tokenizer);
  EXPECT_EQ(parse_checked_config(to_yaml(c), "r.yaml").data.tokenizer, tokenizer);
  expect_error_at("model:\n  vocab_size: 256\ndata:\n  tokenizer: " + tokenizer + "\n",
                  "vocab_size", "model.vocab_size", "has 257 ids");
  const std::string unsupported = write(
      R"({"normalizer": {"type": "Lowercase"}, "model": {"type": "BPE", "vocab": {}, "merges": []}})",
      "lower.json");
  expect_error_at("data:\n  tokenizer: " + unsupported + "\n", "tokenizer", "data.tokenizer",
                  unsupported + ": normalizer.type: 'Lowercase' is not supported");
  expect_error_at("data:\n  tokenizer: nope\n", "nope", "data.tokenizer", "unknown tokenizer");
}

}  // namespace
}  // namespace cmpi::config
