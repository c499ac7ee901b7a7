// Reliability of config loading: an empty config is refused, sizes that no
// machine holds are refused at the key that makes them (before any
// allocation), absurd-but-legal settings are warned about, layout errors name
// the keys the user wrote, and the pre-flight memory check refuses a run that
// cannot fit, naming the keys that drive it.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "config/config_loader.h"
#include "launch/config_warnings.h"
#include "launch/memory_preflight.h"
#include "models/family/model_family.h"
#include "tests/config/config_test_support.h"

namespace cmpi::config {
namespace {

using namespace config_testing;

TEST_F(ConfigTest, EmptyOrCommentOnlyConfigIsAnErrorThatSaysHowToAskForDefaults) {
  for (const std::string text : {"", "\n\n  \n", "# nothing here\n# at all\n", "---\n"}) {
    const std::string path = write(text);
    const std::string message = error_of([&] { load_checked_config(path); });
    EXPECT_EQ(message.rfind(path + ": the config is empty", 0), 0u) << message;
    EXPECT_CONTAINS(message, "{}");
  }
  EXPECT_EQ(load_checked_config(write("{}")).model.layers, ModelConfig().layers);
}

TEST_F(ConfigTest, HugeModelSizesAreRefusedAtTheKeyBeforeAnyArithmetic) {
  const std::string text = "model:\n  hidden: 1000000000000\n";
  expect_error_at(text, "hidden", "model.hidden", "must be <= 1048576, got 1000000000000");
  const std::string ratio = "model:\n  mlp_ratio: 4611686018427387904\n";
  expect_error_at(ratio, "mlp_ratio", "model.mlp_ratio", "must be <= 256");
  EXPECT_CONTAINS(load_error("{}", {"model.layers=100000000"}), "--set model.layers=100000000");
}

TEST_F(ConfigTest, HugeChunksAndBucketsAreRefusedNamingTheKey) {
  expect_error_at("compression:\n  chunk_bytes: 1TiB\n", "chunk_bytes", "compression.chunk_bytes",
                  "must be <= 1073741824");
  expect_error_at("parallel:\n  dp_bucket_bytes: 8GiB\n", "dp_bucket_bytes",
                  "parallel.dp_bucket_bytes", "must be <= 1073741824");
  const std::string rule =
      "compression:\n  rules:\n    - match: {group: dp}\n      codec: mpc\n"
      "      chunk_bytes: 2GiB\n";
  expect_error_at(rule, "chunk_bytes: 2GiB", "compression.rules[0].chunk_bytes",
                  "must be <= 1073741824");
}

TEST_F(ConfigTest, ProductsOfLegalSizesThatNoMachineHoldsNameTheLargestWrittenFactor) {
  // Each key is within its bound, the logits of one micro-batch are not.
  const std::string text =
      "model:\n  vocab_size: 2000000000\n  seq_len: 1000000\ntraining:\n  micro_batch: 64\n"
      "  global_batch: 64\n";
  const std::string message = load_error(text);
  EXPECT_CONTAINS(message, "model.vocab_size: one micro-batch's logits would hold");
  EXPECT_CONTAINS(message, "training.micro_batch (64) x model.seq_len (1000000)");
  EXPECT_CONTAINS(message, ":2: ") << "reported at the line of vocab_size";
}

TEST_F(ConfigTest, TinyChunksAndBucketsAreLegalButWarnedAboutWithTheirCost) {
  const std::string text = "compression:\n  chunk_bytes: 4\nparallel:\n  dp_bucket_bytes: 1KiB\n";
  const std::string path = write(text);
  const Config c = load_checked_config(path);
  const std::vector<std::string> warnings = config_warnings(c);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0].rfind(path + ":2: compression.chunk_bytes: 4 bytes", 0), 0u) << warnings[0];
  EXPECT_CONTAINS(warnings[0], "messages per step");
  EXPECT_EQ(warnings[1].rfind(path + ":4: parallel.dp_bucket_bytes: 1KiB", 0), 0u) << warnings[1];
  EXPECT_CONTAINS(warnings[1], "collectives per step");
  EXPECT_TRUE(config_warnings(load_checked_config(write("{}"))).empty())
      << "defaults warn about nothing";
}

TEST_F(ConfigTest, PowerSgdSetUpAsMeasuredNotToConvergeIsWarnedAbout) {
  const std::string head =
      "compression:\n  rules:\n    - match: {group: dp, op: allreduce, role: gradient}\n";
  const std::string path =
      write(head + "      codec: {name: powersgd, rank: 2, raw_embeddings: false}\n");
  const std::vector<std::string> warnings = config_warnings(load_checked_config(path));
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0].rfind(
                path + ":4: compression.rules[0].codec: powersgd with raw_embeddings: false", 0),
            0u)
      << warnings[0];
  EXPECT_CONTAINS(warnings[0], "never reached");
  EXPECT_CONTAINS(warnings[1], "powersgd rank 2 is below 4");
  EXPECT_TRUE(
      config_warnings(load_checked_config(write(head + "      codec: {name: powersgd, rank: 4}\n")))
          .empty())
      << "the defaults at rank 4 warn about nothing";
}

TEST_F(ConfigTest, LayoutErrorWithDataLeftAtAutoNamesTheKeyTheUserWrote) {
  const std::string text = "model:\n  heads: 4\nparallel:\n  tensor: 2\n";
  const std::string path = write(text);
  const Config c = load_checked_config(path);
  const std::string message = error_of([&] { validate_layout(c, 3); });
  EXPECT_EQ(message.rfind(path + ":4: parallel.tensor: ", 0), 0u) << message;
  EXPECT_CONTAINS(message, "world size 3 is not divisible by tensor(2)");
}

TEST_F(ConfigTest, MemoryPreflightRefusesARunThatCannotFitNamingItsDrivers) {
  const std::string text = "model:\n  hidden: 65536\n  heads: 4\n";
  const std::string path = write(text);
  const Config c = load_checked_config(path);
  const parallel::ParallelDims dims = validate_layout(c, 4);
  const uint64_t gib = uint64_t(1) << 30;
  // 2 layers of 12 x 65536^2 weights: ~400 GB of parameters per rank.
  const std::string message = memory_fit_error(c, dims, 4, 24 * gib);
  EXPECT_EQ(message.rfind("memory: each rank needs about", 0), 0u) << message;
  EXPECT_CONTAINS(message, "4 rank(s) on this node need");
  EXPECT_CONTAINS(message, "model.hidden = 65536 (" + path + ":2)");
  EXPECT_CONTAINS(message, "run.memory_check: false");

  const Config small = load_checked_config(write("{}"));
  EXPECT_EQ(memory_fit_error(small, validate_layout(small, 4), 4, 24 * gib), "");
  EXPECT_EQ(memory_fit_error(c, dims, 4, 0), "") << "unknown memory: no verdict";
  const Config off = load_checked_config(write(text + "run:\n  memory_check: false\n"));
  EXPECT_EQ(memory_fit_error(off, dims, 4, 24 * gib), "");
}

// A GPU run is held against its GPU's free memory, shared by the ranks on
// that GPU, and the message says which memory it compared.
TEST_F(ConfigTest, MemoryPreflightOfAGpuRunNamesTheGpu) {
  const std::string text = "model:\n  seq_len: 1000000\n  layers: 1\n";
  const Config c = load_checked_config(write(text));
  const uint64_t gib = uint64_t(1) << 30;
  const std::string message =
      memory_fit_error(c, validate_layout(c, 1), 2, 8 * gib, "GPU cuda:0 (its free memory)");
  EXPECT_CONTAINS(message, "2 rank(s) on GPU cuda:0 (its free memory) need");
}

TEST_F(ConfigTest, MemoryPreflightNamesActivationKeysWhenActivationsDominate) {
  const std::string text = "model:\n  seq_len: 1000000\n  layers: 1\n";
  const Config c = load_checked_config(write(text));
  const std::string message = memory_fit_error(c, validate_layout(c, 1), 1, uint64_t(8) << 30);
  EXPECT_CONTAINS(message, "The largest part is activations");
  EXPECT_CONTAINS(message, "model.seq_len = 1000000");
}

TEST(MemoryEstimate, ScalesWithShardingAndPipelineSchedule) {
  Config c;
  c.model.hidden = 1024;
  c.model.heads = 16;
  c.model.layers = 8;
  c.model.vocab_size = 50000;
  c.training.global_batch = 64;
  c.training.micro_batch = 4;
  parallel::ParallelDims one;
  const auto whole = estimate_memory(c, one);
  // AdamW's two moments are twice the parameters; gradients equal them.
  EXPECT_NEAR(double(whole.optimizer_bytes), 2 * double(whole.gradient_bytes), 1);
  parallel::ParallelDims zero1 = one;
  zero1.dp = 4;
  zero1.zero_stage = 1;
  EXPECT_NEAR(double(estimate_memory(c, zero1).optimizer_bytes), double(whole.optimizer_bytes) / 4,
              1);
  parallel::ParallelDims tp2 = one;
  tp2.tp = 2;
  EXPECT_LT(estimate_memory(c, tp2).parameter_bytes, 0.55 * whole.parameter_bytes);
  parallel::ParallelDims pp4 = one;
  pp4.pp = 4;
  c.parallel.schedule = config::PipelineSchedule::kGpipe;
  const auto gpipe = estimate_memory(c, pp4);
  c.parallel.schedule = config::PipelineSchedule::kOneFOneB;
  const auto one_f_one_b = estimate_memory(c, pp4);
  EXPECT_GT(gpipe.activation_bytes, 2 * one_f_one_b.activation_bytes)
      << "GPipe keeps all 16 micro-batches, 1F1B at most 4";
}

}  // namespace
}  // namespace cmpi::config
