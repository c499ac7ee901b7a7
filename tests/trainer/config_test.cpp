// Config loading: defaults, --set overrides, one test per class of bad input
// (each checking that the message names the key, the file and the line), the
// compression section, the to_yaml round trip and the shipped configs.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compress/codec_registry.h"
#include "trainer/config_loader.h"

namespace cmpi::trainer {
namespace {

namespace fs = std::filesystem;

// 1-based line of the first occurrence of `needle` in `text`.
int line_of(const std::string& text, const std::string& needle) {
  const size_t at = text.find(needle);
  EXPECT_NE(at, std::string::npos) << "test bug: '" << needle << "' not in the YAML";
  return 1 + int(std::count(text.begin(), text.begin() + std::min(at, text.size()), '\n'));
}

// The ConfigError message of `action`, or a test failure if it does not throw one.
std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const ConfigError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected a ConfigError, got another exception: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected a ConfigError, nothing was thrown";
  return "";
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "message: " << (haystack)

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("cmpi_config_test_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes `text` to <temp>/<name> and returns the path.
  std::string write(const std::string& text, const std::string& name = "run.yaml") {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }

  // Loads `text` from a file and returns the error message it gives.
  std::string load_error(const std::string& text, const std::vector<std::string>& overrides = {}) {
    const std::string path = write(text);
    return error_of([&] { load_config(path, overrides); });
  }

  // Expects loading `text` to fail with a message "<file>:<line>: <key>: ..."
  // (the line being that of `line_needle`) containing `detail`.
  void expect_error_at(const std::string& text, const std::string& line_needle,
                       const std::string& key, const std::string& detail) {
    const std::string path = write(text);
    const std::string message = error_of([&] { load_config(path, {}); });
    const std::string prefix =
        path + ":" + std::to_string(line_of(text, line_needle)) + ": " + key + ": ";
    EXPECT_EQ(message.rfind(prefix, 0), 0u)
        << "expected prefix: " << prefix << "\nmessage: " << message;
    EXPECT_CONTAINS(message, detail);
  }

  fs::path dir_;
};

// ------------------------------------------------------------------ defaults

TEST_F(ConfigTest, EmptyFileGivesTheDefaultsOfEverySection) {
  const Config c = load_config(write(""));
  const Config defaults;
  EXPECT_EQ(c.run.name, defaults.run.name);
  EXPECT_EQ(c.model.layers, defaults.model.layers);
  EXPECT_EQ(c.model.hidden, defaults.model.hidden);
  EXPECT_EQ(c.parallel.data, 0) << "data defaults to auto";
  EXPECT_EQ(c.parallel.schedule, "1f1b");
  EXPECT_EQ(c.parallel.dp_bucket_bytes, 25LL << 20);
  EXPECT_EQ(c.training.micro_batch, defaults.training.micro_batch);
  EXPECT_DOUBLE_EQ(c.training.lr, defaults.training.lr);
  EXPECT_EQ(c.data.kind, "markov");
  EXPECT_EQ(c.compression.preset, "none");
  EXPECT_EQ(c.compression.min_bytes, 64 << 10);
  EXPECT_TRUE(c.compression.rules.empty());
  EXPECT_EQ(c.checkpoint.every, 0);
  EXPECT_EQ(c.log.every, 10);
  EXPECT_TRUE(c.log.metrics_jsonl);
  EXPECT_TRUE(c.training.overlap_grad_reduce);
  EXPECT_TRUE(c.origins.empty());
}

TEST_F(ConfigTest, KeysLeftOutKeepTheirDefaultsAndEmptySectionsAreAllowed) {
  const std::string text = "model:\n  layers: 3\nlog:\ntraining:\n  lr: 0.01\n";
  const std::string path = write(text);
  const Config c = load_config(path);
  EXPECT_EQ(c.model.layers, 3);
  EXPECT_EQ(c.model.hidden, ModelConfig().hidden);
  EXPECT_DOUBLE_EQ(c.training.lr, 0.01);
  EXPECT_EQ(c.training.steps, TrainingConfig().steps);
  EXPECT_EQ(c.log.every, LogConfig().every);
  EXPECT_EQ(origin_of(c, "model.layers"), path + ":2");
  EXPECT_EQ(origin_of(c, "training.lr"), path + ":5");
  EXPECT_EQ(origin_of(c, "model.hidden"), path) << "a default has no line";
}

TEST_F(ConfigTest, ReadsEveryValueForm) {
  const Config c = load_config(write(R"(
run: {name: exp1, dir: /tmp/runs, seed: 18446744073709551615}
model: {vocab_size: 512, seq_len: 32, layers: 4, hidden: 96, heads: 6, mlp_ratio: 2,
        dropout: 0.1, init_std: 1e-2}
parallel: {data: 2, tensor: 2, pipeline: 2, zero_stage: 2, schedule: gpipe,
           dp_bucket_bytes: 1.5MiB}
training: {steps: 20, global_batch: 64, micro_batch: 4, lr: 1e-3, min_lr: 0, warmup_steps: 20,
           weight_decay: 0, beta1: 0.8, beta2: 0.99, eps: 1e-6, grad_clip: 0, threads: 2,
           overlap_grad_reduce: false}
data: {kind: markov, seed: 7, branching: 8, concentration: 0.5}
checkpoint: {dir: ckpt, every: 0}
log: {every: 1, metrics_jsonl: no}
)"));
  EXPECT_EQ(c.run.seed, 18446744073709551615ull);
  EXPECT_EQ(c.run.dir, "/tmp/runs");
  EXPECT_EQ(c.model.heads, 6);
  EXPECT_DOUBLE_EQ(c.model.dropout, 0.1);
  EXPECT_DOUBLE_EQ(c.model.init_std, 0.01);
  EXPECT_EQ(c.parallel.data, 2);
  EXPECT_EQ(c.parallel.zero_stage, 2);
  EXPECT_EQ(c.parallel.schedule, "gpipe");
  EXPECT_EQ(c.parallel.dp_bucket_bytes, 1536 * 1024);
  EXPECT_DOUBLE_EQ(c.training.min_lr, 0.0);
  EXPECT_EQ(c.training.warmup_steps, 20);
  EXPECT_EQ(c.training.threads, 2);
  EXPECT_FALSE(c.training.overlap_grad_reduce);
  EXPECT_DOUBLE_EQ(c.data.concentration, 0.5);
  EXPECT_EQ(c.checkpoint.dir, "ckpt");
  EXPECT_FALSE(c.log.metrics_jsonl);
}

TEST(SizeParsing, AcceptsBytesAndDecimalAndBinaryUnits) {
  EXPECT_EQ(parse_size("65536"), 65536);
  EXPECT_EQ(parse_size("0"), 0);
  EXPECT_EQ(parse_size("64KiB"), 65536);
  EXPECT_EQ(parse_size("64 KiB"), 65536);
  EXPECT_EQ(parse_size("1MiB"), 1 << 20);
  EXPECT_EQ(parse_size("2GiB"), int64_t(2) << 30);
  EXPECT_EQ(parse_size("1TiB"), int64_t(1) << 40);
  EXPECT_EQ(parse_size("25MB"), 25000000);
  EXPECT_EQ(parse_size("3kB"), 3000);
  EXPECT_EQ(parse_size("3KB"), 3000);
  EXPECT_EQ(parse_size("1GB"), 1000000000);
  EXPECT_EQ(parse_size("512B"), 512);
  EXPECT_EQ(parse_size("1.5KiB"), 1536);
  EXPECT_EQ(parse_size("0.5MB"), 500000);
}

TEST(SizeParsing, RejectsNegativeFractionalBytesAndUnknownUnits) {
  for (const char* bad : {"-1", "-64KiB", "", "KiB", "1.3B", "0.1KiB", "64kib", "64K", "1e6",
                          "64.KiB", "1.5", "9223372036854775808", "9000000TiB", "12 34"})
    EXPECT_FALSE(parse_size(bad).has_value()) << bad;
}

TEST(SizeParsing, FormatsWithTheLargestWholeUnit) {
  EXPECT_EQ(format_size(65536), "64KiB");
  EXPECT_EQ(format_size(1536 * 1024), "1536KiB");
  EXPECT_EQ(format_size(25000000), "25MB");
  EXPECT_EQ(format_size(1000001), "1000001");
  EXPECT_EQ(format_size(0), "0");
  for (int64_t v :
       {int64_t(1), int64_t(4096), int64_t(25000000), int64_t(1000001), int64_t(3) << 40})
    EXPECT_EQ(parse_size(format_size(v)), v);
}

// ----------------------------------------------------------------- overrides

TEST_F(ConfigTest, OverridesReplaceValuesAndCreateMissingKeys) {
  const std::string path = write("training:\n  lr: 0.003\nparallel:\n  tensor: 1\nlog:\n");
  const Config c =
      load_config(path, {"training.lr=0.01", "compression.min_bytes=1MiB", "parallel.data=2",
                         "log.every=5", "model.heads=8", "compression.preset=zhybrid"});
  EXPECT_DOUBLE_EQ(c.training.lr, 0.01);
  EXPECT_EQ(c.compression.min_bytes, 1 << 20);
  EXPECT_EQ(c.parallel.data, 2);
  EXPECT_EQ(c.log.every, 5);
  EXPECT_EQ(c.model.heads, 8);
  EXPECT_EQ(c.compression.preset, "zhybrid");
  EXPECT_EQ(origin_of(c, "training.lr"), "--set training.lr=0.01");
  EXPECT_EQ(origin_of(c, "parallel.tensor"), path + ":4");
}

TEST_F(ConfigTest, LaterOverridesWinAndFlowValuesAndListIndicesWork) {
  const std::string text =
      "compression:\n  rules:\n    - match: {group: dp}\n      codec: identity\n";
  const std::string path = write(text);
  const Config c = load_config(
      path, {"training.steps=50", "training.steps=60", "compression.rules[0].match.group=[tp, pp]",
             "compression.rules[0].chunk_bytes=64KiB"});
  EXPECT_EQ(c.training.steps, 60);
  ASSERT_EQ(c.compression.rules.size(), 1u);
  EXPECT_EQ(c.compression.rules[0].match.groups,
            (std::vector<comm::GroupKind>{comm::GroupKind::kTp, comm::GroupKind::kPp}));
  EXPECT_EQ(c.compression.rules[0].chunk_bytes, 64 << 10);
  EXPECT_EQ(c.compression.rules[0].origin, path + ":3");

  const Config replaced =
      load_config(path, {"compression.rules=[{match: {op: allgather}, codec: none}]"});
  ASSERT_EQ(replaced.compression.rules.size(), 1u);
  EXPECT_FALSE(replaced.compression.rules[0].codec.has_value());
  EXPECT_EQ(replaced.compression.rules[0].origin,
            "--set compression.rules=[{match: {op: allgather}, codec: none}]");
}

TEST_F(ConfigTest, OverrideOfAnUnknownKeyIsAnErrorNamingTheFlag) {
  const std::string text = "training:\n  lr: 0.003\n";
  std::string message = load_error(text, {"training.lrr=0.01"});
  EXPECT_EQ(message.rfind("--set training.lrr=0.01: training.lrr: unknown key", 0), 0u) << message;
  EXPECT_CONTAINS(message, "did you mean training.lr?");

  message = load_error(text, {"trainng.steps=3"});
  EXPECT_EQ(message.rfind("--set trainng.steps=3: trainng: unknown key", 0), 0u) << message;
  EXPECT_CONTAINS(message, "did you mean training?");
}

TEST_F(ConfigTest, OverriddenValuesGetTheSameValidation) {
  const std::string message =
      load_error("training:\n  micro_batch: 8\n", {"training.micro_batch=eight"});
  EXPECT_EQ(message,
            "--set training.micro_batch=eight: training.micro_batch: expected a positive "
            "integer, got \"eight\"");
}

TEST_F(ConfigTest, MalformedOverridesAreErrorsNamingTheFlag) {
  const std::string text = "training:\n  lr: 0.003\ncompression:\n  rules: []\n";
  struct Case {
    const char* flag;
    const char* detail;
  } cases[] = {
      {"training.lr", "expected key.path=value"},
      {"=3", "bad key path"},
      {"training..lr=3", "bad key path"},
      {"training.lr=", "missing value"},
      {"training.lr.x=1", "training.lr is a single value, not a section"},
      {"compression.rules[3].codec=none",
       "compression.rules[3] does not exist (compression.rules has 0 items)"},
      {"training[0]=1", "training is a mapping, not a list"},
      {"training.lr=[1", "not valid YAML"},
  };
  for (const Case& c : cases) {
    const std::string message = load_error(text, {c.flag});
    EXPECT_EQ(message.rfind("--set " + std::string(c.flag) + ": ", 0), 0u) << message;
    EXPECT_CONTAINS(message, c.detail);
  }
}

// ---------------------------------------------------------------- bad input

TEST_F(ConfigTest, UnknownKeyNamesKeyFileLineAndSuggestsTheClosest) {
  const std::string text = "model:\n  layers: 2\ntraining:\n  steps: 10\n  micro_bach: 4\n";
  expect_error_at(text, "micro_bach", "training.micro_bach",
                  "unknown key (did you mean training.micro_batch?)");
}

TEST_F(ConfigTest, UnknownKeyFarFromAnyKnownOneListsTheKnownKeys) {
  const std::string text = "log:\n  every: 3\n  colour: blue\n";
  expect_error_at(text, "colour", "log.colour", "known keys in log: every, metrics_jsonl");
  expect_error_at("modle:\n  layers: 2\n", "modle", "modle", "did you mean model?");
}

TEST_F(ConfigTest, DuplicatedKeyIsAnError) {
  const std::string text = "training:\n  steps: 10\n  steps: 20\n";
  const std::string path = write(text);
  const std::string message = error_of([&] { load_config(path); });
  EXPECT_EQ(message, path + ":3: training.steps: key written twice (first at " + path + ":2)");
}

TEST_F(ConfigTest, WrongTypesNameKeyFileLineAndWhatWasFound) {
  struct Case {
    std::string yaml, needle, key, detail;
  } cases[] = {
      {"training:\n  steps: 5\n  micro_batch: eight\n", "eight", "training.micro_batch",
       "expected a positive integer, got \"eight\""},
      {"training:\n  micro_batch: 8.5\n", "8.5", "training.micro_batch",
       "expected a positive integer, got 8.5"},
      {"training:\n  steps: \"8\"\n", "steps", "training.steps", "got the quoted string \"8\""},
      {"training:\n  steps: [1, 2]\n", "steps", "training.steps",
       "expected a positive integer, got a list"},
      {"training:\n  lr: fast\n", "fast", "training.lr", "expected a number > 0, got \"fast\""},
      {"model:\n  layers:\n  heads: 4\n", "layers", "model.layers", "got nothing (an empty value)"},
      {"log:\n  metrics_jsonl: maybe\n", "maybe", "log.metrics_jsonl",
       "expected true or false, got \"maybe\""},
      {"training:\n  overlap_grad_reduce: 2\n", "2", "training.overlap_grad_reduce",
       "expected true or false, got 2"},
      {"run:\n  name: {a: 1}\n", "name", "run.name", "expected a string, got a mapping"},
      {"run:\n  seed: -1\n", "seed", "run.seed", "expected a non-negative integer, got -1"},
      {"model: 5\n", "model", "model", "expected a mapping of keys to values, got 5"},
      {"parallel:\n  dp_bucket_bytes: lots\n", "lots", "parallel.dp_bucket_bytes",
       "expected a positive size (bytes, or a number with a unit: B, KB"},
      {"parallel:\n  data: all\n", "data", "parallel.data",
       "expected auto or an integer in [1, 16777216], got \"all\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.yaml);
    expect_error_at(c.yaml, c.needle, c.key, c.detail);
  }
}

TEST_F(ConfigTest, NegativeSizesAreErrors) {
  expect_error_at("parallel:\n  tensor: 1\n  dp_bucket_bytes: -1MiB\n", "-1MiB",
                  "parallel.dp_bucket_bytes", "expected a positive size");
  expect_error_at("compression:\n  min_bytes: -5\n", "-5", "compression.min_bytes",
                  "expected a non-negative size");
  expect_error_at("model:\n  hidden: -64\n", "-64", "model.hidden",
                  "expected a positive integer, got -64");
  expect_error_at("parallel:\n  dp_bucket_bytes: 0\n", "0", "parallel.dp_bucket_bytes",
                  "expected a positive size");
}

TEST_F(ConfigTest, ImpossibleValuesNameTheKeyAtFault) {
  struct Case {
    std::string yaml, needle, key, detail;
  } cases[] = {
      {"model:\n  hidden: 64\n  heads: 5\n", "heads", "model.heads",
       "model.hidden (64) must be divisible by model.heads (5)"},
      {"training:\n  global_batch: 30\n  micro_batch: 8\n", "global_batch", "training.global_batch",
       "must be a multiple of training.micro_batch (8), got 30"},
      {"training:\n  lr: 0.001\n  min_lr: 0.01\n", "min_lr", "training.min_lr",
       "must be <= training.lr (0.001), got 0.01"},
      {"training:\n  min_lr: -0.1\n", "min_lr", "training.min_lr", "expected a number >= 0"},
      {"training:\n  steps: 10\n  warmup_steps: 11\n", "warmup", "training.warmup_steps",
       "must be <= training.steps (10), got 11"},
      {"model:\n  dropout: 1.0\n", "dropout", "model.dropout",
       "expected a number in [0, 1), got 1.0"},
      {"parallel:\n  schedule: 1fb1\n", "schedule", "parallel.schedule",
       "expected one of gpipe, 1f1b, got \"1fb1\" (did you mean 1f1b?)"},
      {"data:\n  kind: tokens\n", "kind", "data.kind", "expected one of markov, got \"tokens\""},
      {"data:\n  branching: 300\n", "branching", "data.branching",
       "more successors than model.vocab_size (256)"},
      {"parallel:\n  data: 0\n", "data", "parallel.data", "expected auto or an integer in [1,"},
      {"parallel:\n  zero_stage: 4\n", "zero_stage", "parallel.zero_stage",
       "expected an integer in [0, 3], got 4"},
      {"log:\n  every: 0\n", "every", "log.every", "expected a positive integer, got 0"},
      {"training:\n  threads: 0\n", "threads", "training.threads", "expected an integer in [1,"},
      {"training:\n  beta2: 1\n", "beta2", "training.beta2", "expected a number in [0, 1)"},
      {"run:\n  name: a/b\n", "name", "run.name", "must be a plain directory name"},
      {"model:\n  layers: 2\nparallel:\n  pipeline: 3\n", "pipeline", "parallel.pipeline",
       "every stage needs at least one layer"},
      {"parallel:\n  spatial: 2\n", "spatial", "parallel.spatial", "a GPT needs spatial: 1"},
      {"checkpoint:\n  every: 100\n", "every", "checkpoint.every",
       "checkpointing is not implemented in this version"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.yaml);
    expect_error_at(c.yaml, c.needle, c.key, c.detail);
  }
}

TEST_F(ConfigTest, InvalidYamlAndMissingFileNameTheFile) {
  const std::string path = write("training:\n  lr: [0.1\n");
  std::string message = error_of([&] { load_config(path); });
  EXPECT_EQ(message.rfind(path + ":", 0), 0u) << message;
  EXPECT_CONTAINS(message, "not valid YAML");

  const std::string missing = (dir_ / "nope.yaml").string();
  message = error_of([&] { load_config(missing); });
  EXPECT_EQ(message, missing + ": cannot open the config file");
  EXPECT_EQ(error_of([&] { load_config(dir_.string()); }),
            dir_.string() + ": is a directory, not a config file");
}

// -------------------------------------------------------------------- layout

TEST_F(ConfigTest, LayoutResolvesDataParallelFromTheWorldSize) {
  const Config c = load_config(write("parallel:\n  data: auto\n  tensor: 2\n"));
  const parallel::ParallelDims dims = validate_layout(c, 8);
  EXPECT_EQ(dims.dp, 4);
  EXPECT_EQ(dims.tp, 2);
  EXPECT_EQ(dims.pp, 1);
}

TEST_F(ConfigTest, LayoutThatDoesNotDivideTheWorldSizeNamesTheParallelKeys) {
  const std::string text = "model:\n  heads: 4\nparallel:\n  data: auto\n  tensor: 4\n";
  const std::string path = write(text);
  const Config c = load_config(path);
  std::string message = error_of([&] { validate_layout(c, 6); });
  EXPECT_EQ(
      message.rfind(path + ":" + std::to_string(line_of(text, "data")) + ": parallel.data: ", 0),
      0u)
      << message;
  EXPECT_CONTAINS(message, "parallel (data: auto, tensor: 4, pipeline: 1, spatial: 1) on 6 ranks");
  EXPECT_CONTAINS(message, "world size 6 is not divisible by");

  const std::string fixed_text = "parallel:\n  data: 2\n  tensor: 2\n";
  const std::string fixed_path = write(fixed_text, "fixed.yaml");
  const Config fixed = load_config(fixed_path);
  message = error_of([&] { validate_layout(fixed, 8); });
  EXPECT_EQ(message.rfind(fixed_path + ":2: parallel.data: ", 0), 0u) << message;
  EXPECT_CONTAINS(message, "but the world has 8");
  EXPECT_EQ(validate_layout(fixed, 4).dp, 2);
}

TEST_F(ConfigTest, HeadsNotDivisibleByTensorParallelismIsAnError) {
  const std::string text = "model:\n  heads: 4\n  hidden: 48\nparallel:\n  tensor: 3\n";
  expect_error_at(text, "tensor", "parallel.tensor",
                  "tp group: model.heads (4) is not divisible by parallel.tensor (3)");
}

TEST_F(ConfigTest, GlobalBatchMustSplitOverMicroBatchesAndDataParallelRanks) {
  const std::string text = "training:\n  global_batch: 32\n  micro_batch: 8\n";
  const std::string path = write(text);
  const Config c = load_config(path);
  EXPECT_EQ(validate_layout(c, 2).dp, 2);
  EXPECT_EQ(validate_layout(c, 4).dp, 4);
  const std::string message = error_of([&] { validate_layout(c, 3); });
  EXPECT_EQ(message.rfind(path + ":2: training.global_batch: ", 0), 0u) << message;
  EXPECT_CONTAINS(message, "multiple of training.micro_batch x dp = 24");
  EXPECT_CONTAINS(error_of([&] { validate_layout(c, 0); }), "world size must be >= 1");
}

// --------------------------------------------------------------- compression

TEST_F(ConfigTest, CompressionRulesAreReadInOrderWithTheirOrigin) {
  const std::string text = R"(compression:
  preset: mzhybrid
  min_bytes: 32KiB
  chunk_bytes: 256KiB
  error_sample_rate: 0.5
  rules:
    - match: {group: dp, op: [allreduce, reduce_scatter], role: gradient, min_bytes: 1MiB}
      codec: {name: identity}
      chunk_bytes: 4MiB
    - match: {group: [tp, pp], max_bytes: 64KiB}
      codec: identity
    - match: {op: send, locality: inter}
      codec: none
)";
  const std::string path = write(text);
  const comm::PolicyConfig p = load_config(path).compression;
  EXPECT_EQ(p.preset, "mzhybrid");
  EXPECT_EQ(p.min_bytes, 32 << 10);
  EXPECT_EQ(p.chunk_bytes, 256 << 10);
  EXPECT_DOUBLE_EQ(p.error_sample_rate, 0.5);
  ASSERT_EQ(p.rules.size(), 3u);

  const comm::PolicyRule& first = p.rules[0];
  EXPECT_EQ(first.match.groups, std::vector<comm::GroupKind>{comm::GroupKind::kDp});
  EXPECT_EQ(first.match.ops,
            (std::vector<comm::Op>{comm::Op::kAllreduce, comm::Op::kReduceScatter}));
  EXPECT_EQ(first.match.roles, std::vector<comm::Role>{comm::Role::kGradient});
  EXPECT_EQ(first.match.min_bytes, 1 << 20);
  EXPECT_EQ(first.match.max_bytes, -1);
  ASSERT_TRUE(first.codec.has_value());
  EXPECT_EQ(first.codec->name(), "identity");
  EXPECT_EQ(first.chunk_bytes, 4 << 20);
  EXPECT_FALSE(first.error_feedback);
  EXPECT_EQ(first.origin, path + ":" + std::to_string(line_of(text, "- match: {group: dp")));

  EXPECT_EQ(p.rules[1].match.groups,
            (std::vector<comm::GroupKind>{comm::GroupKind::kTp, comm::GroupKind::kPp}));
  EXPECT_TRUE(p.rules[1].match.localities.empty()) << "no locality key: any";
  EXPECT_EQ(p.rules[2].match.localities, std::vector<comm::Locality>{comm::Locality::kInter});
  EXPECT_TRUE(p.rules[1].match.ops.empty());
  EXPECT_EQ(p.rules[1].match.min_bytes, -1);
  EXPECT_EQ(p.rules[1].match.max_bytes, 64 << 10);
  EXPECT_EQ(p.rules[1].chunk_bytes, -1);
  EXPECT_EQ(p.rules[1].codec->name(), "identity");

  EXPECT_EQ(p.rules[2].match.ops, std::vector<comm::Op>{comm::Op::kSendRecv});
  EXPECT_FALSE(p.rules[2].codec.has_value());
}

TEST_F(ConfigTest, BadCompressionRulesNameTheRuleKeyFileAndLine) {
  const std::string head = "compression:\n  rules:\n    - match: {group: dp}\n      codec: none\n";
  struct Case {
    std::string rule, needle, key, detail;
  } cases[] = {
      {"    - match: {group: dp}\n      codec: {name: zfpp, rate: 8}\n", "zfpp",
       "compression.rules[1].codec", "unknown codec 'zfpp' (known: "},
      {"    - match: {group: [dp, tq]}\n      codec: none\n", "tq",
       "compression.rules[1].match.group",
       "unknown group 'tq' (known: world, dp, tp, pp, sp, "
       "zero; did you mean tp?)"},
      {"    - match: {op: allreduse}\n      codec: none\n", "allreduse",
       "compression.rules[1].match.op", "unknown operation 'allreduse'"},
      {"    - match: {role: gradients}\n      codec: none\n", "gradients",
       "compression.rules[1].match.role", "did you mean gradient?"},
      {"    - match: {group: dp}\n      codec: {name: identity, rate: 10}\n", "rate: 10",
       "compression.rules[1].codec", "codec 'identity': parameter 'rate' is unknown"},
      {"    - match: {group: dp}\n      codec: {name: identity, rate: [1, 2]}\n", "rate: [",
       "compression.rules[1].codec.rate", "codec parameters must be single values"},
      {"    - match: {group: dp}\n      codec: {rate: 10}\n", "rate: 10",
       "compression.rules[1].codec", "missing `name:`"},
      {"    - match: {group: dp}\n", "- match: {group: dp}\n", "compression.rules[1].codec",
       "missing: every rule says how to send"},
      {"    - match: {group: dp}\n      codecs: none\n      codec: none\n", "codecs",
       "compression.rules[1].codecs", "did you mean compression.rules[1].codec?"},
      {"    - match: {group: dp}\n      codec: none\n      error_feedback: true\n",
       "error_feedback", "compression.rules[1].error_feedback", "no error to feed back"},
      {"    - match: {group: dp}\n      codec: identity\n      error_feedback: true\n",
       "error_feedback", "compression.rules[1].error_feedback", "is lossless"},
      {"    - match: {min_bytes: 1MiB, max_bytes: 4KiB}\n      codec: none\n", "max_bytes",
       "compression.rules[1].match.max_bytes", "matches nothing"},
      {"    - match: {max_bytes: 4KiB}\n      codec: none\n", "max_bytes",
       "compression.rules[1].match.max_bytes", "below the inherited compression.min_bytes (64KiB)"},
      {"    - match: {group: dp}\n      codec: none\n      chunk_bytes: 1001\n", "chunk_bytes",
       "compression.rules[1].chunk_bytes", "multiple of 4"},
      {"    - match: {group: dp, size: 3}\n      codec: none\n", "size",
       "compression.rules[1].match.size", "unknown key"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.rule);
    const std::string text = head + c.rule;
    const std::string path = write(text);
    const std::string message = error_of([&] { load_config(path); });
    const size_t at = text.find(c.needle, head.size());  // the needle in the bad rule
    ASSERT_NE(at, std::string::npos) << "test bug: " << c.needle;
    const int line = 1 + int(std::count(text.begin(), text.begin() + at, '\n'));
    const std::string prefix = path + ":" + std::to_string(line) + ": " + c.key + ": ";
    EXPECT_EQ(message.rfind(prefix, 0), 0u)
        << "expected prefix: " << prefix << "\nmessage: " << message;
    EXPECT_CONTAINS(message, c.detail);
  }
}

TEST_F(ConfigTest, BadCompressionSectionValues) {
  expect_error_at("compression:\n  preset: zhybird\n", "zhybird", "compression.preset",
                  "did you mean zhybrid?");
  expect_error_at("compression:\n  rules: {group: dp}\n", "group", "compression.rules",
                  "expected a list of rules");
  expect_error_at("compression:\n  chunk_bytes: 1023\n", "1023", "compression.chunk_bytes",
                  "multiple of 4");
  expect_error_at("compression:\n  error_sample_rate: 2\n", "2", "compression.error_sample_rate",
                  "expected a number in [0, 1]");
  expect_error_at("compression:\n  preset_locality: intra\n", "intra",
                  "compression.preset_locality", "inter");
  expect_error_at("compression:\n  ranks_per_node: -1\n", "-1", "compression.ranks_per_node",
                  "");
  expect_error_at(
      "compression:\n  rules:\n    - match: {locality: outer}\n      codec: none\n", "outer",
      "compression.rules[0].match.locality", "inter");
}

TEST_F(ConfigTest, ZfpParametersAreValidatedWhenZfpIsBuiltIn) {
  if (!compress::CodecRegistry::with_builtin_codecs().contains("zfp"))
    GTEST_SKIP() << "zfp is not registered in this build";
  const std::string text =
      "compression:\n  rules:\n    - match: {group: dp}\n      codec: {name: zfp, mode: rate, "
      "rate: fast}\n";
  expect_error_at(text, "codec:", "compression.rules[0].codec", "rate");
  const Config ok =
      load_config(write("compression:\n  rules:\n    - match: {group: dp}\n      codec: {name: "
                        "zfp, mode: rate, rate: 10}\n"
                        "      error_feedback: true\n",
                        "ok.yaml"));
  EXPECT_TRUE(ok.compression.rules.at(0).error_feedback);
}

// ----------------------------------------------------------------- round trip

void expect_same_config(const Config& a, const Config& b) {
  EXPECT_EQ(a.run.name, b.run.name);
  EXPECT_EQ(a.run.dir, b.run.dir);
  EXPECT_EQ(a.run.seed, b.run.seed);
  EXPECT_EQ(a.model.vocab_size, b.model.vocab_size);
  EXPECT_EQ(a.model.seq_len, b.model.seq_len);
  EXPECT_EQ(a.model.layers, b.model.layers);
  EXPECT_EQ(a.model.hidden, b.model.hidden);
  EXPECT_EQ(a.model.heads, b.model.heads);
  EXPECT_EQ(a.model.mlp_ratio, b.model.mlp_ratio);
  EXPECT_EQ(a.model.dropout, b.model.dropout);
  EXPECT_EQ(a.model.init_std, b.model.init_std);
  EXPECT_EQ(a.parallel.data, b.parallel.data);
  EXPECT_EQ(a.parallel.tensor, b.parallel.tensor);
  EXPECT_EQ(a.parallel.pipeline, b.parallel.pipeline);
  EXPECT_EQ(a.parallel.spatial, b.parallel.spatial);
  EXPECT_EQ(a.parallel.zero_stage, b.parallel.zero_stage);
  EXPECT_EQ(a.parallel.schedule, b.parallel.schedule);
  EXPECT_EQ(a.parallel.dp_bucket_bytes, b.parallel.dp_bucket_bytes);
  EXPECT_EQ(a.training.steps, b.training.steps);
  EXPECT_EQ(a.training.global_batch, b.training.global_batch);
  EXPECT_EQ(a.training.micro_batch, b.training.micro_batch);
  EXPECT_EQ(a.training.lr, b.training.lr);  // exact: to_yaml writes round-trip decimals
  EXPECT_EQ(a.training.min_lr, b.training.min_lr);
  EXPECT_EQ(a.training.warmup_steps, b.training.warmup_steps);
  EXPECT_EQ(a.training.weight_decay, b.training.weight_decay);
  EXPECT_EQ(a.training.beta1, b.training.beta1);
  EXPECT_EQ(a.training.beta2, b.training.beta2);
  EXPECT_EQ(a.training.eps, b.training.eps);
  EXPECT_EQ(a.training.grad_clip, b.training.grad_clip);
  EXPECT_EQ(a.training.threads, b.training.threads);
  EXPECT_EQ(a.training.overlap_grad_reduce, b.training.overlap_grad_reduce);
  EXPECT_EQ(a.data.kind, b.data.kind);
  EXPECT_EQ(a.data.seed, b.data.seed);
  EXPECT_EQ(a.data.branching, b.data.branching);
  EXPECT_EQ(a.data.concentration, b.data.concentration);
  EXPECT_EQ(a.compression.preset, b.compression.preset);
  EXPECT_EQ(a.compression.min_bytes, b.compression.min_bytes);
  EXPECT_EQ(a.compression.chunk_bytes, b.compression.chunk_bytes);
  EXPECT_EQ(a.compression.error_sample_rate, b.compression.error_sample_rate);
  EXPECT_EQ(a.compression.preset_locality, b.compression.preset_locality);
  EXPECT_EQ(a.compression.ranks_per_node, b.compression.ranks_per_node);
  EXPECT_EQ(a.compression.plain_ring_min_bytes, b.compression.plain_ring_min_bytes);
  ASSERT_EQ(a.compression.rules.size(), b.compression.rules.size());
  for (size_t i = 0; i < a.compression.rules.size(); ++i) {
    const comm::PolicyRule& x = a.compression.rules[i];
    const comm::PolicyRule& y = b.compression.rules[i];
    EXPECT_EQ(x.match.groups, y.match.groups) << "rule " << i;
    EXPECT_EQ(x.match.ops, y.match.ops) << "rule " << i;
    EXPECT_EQ(x.match.roles, y.match.roles) << "rule " << i;
    EXPECT_EQ(x.match.localities, y.match.localities) << "rule " << i;
    EXPECT_EQ(x.match.min_bytes, y.match.min_bytes) << "rule " << i;
    EXPECT_EQ(x.match.max_bytes, y.match.max_bytes) << "rule " << i;
    ASSERT_EQ(x.codec.has_value(), y.codec.has_value()) << "rule " << i;
    if (x.codec) {
      EXPECT_EQ(x.codec->name(), y.codec->name()) << "rule " << i;
      EXPECT_EQ(x.codec->params(), y.codec->params()) << "rule " << i;
    }
    EXPECT_EQ(x.error_feedback, y.error_feedback) << "rule " << i;
    EXPECT_EQ(x.chunk_bytes, y.chunk_bytes) << "rule " << i;
  }
  EXPECT_EQ(a.checkpoint.dir, b.checkpoint.dir);
  EXPECT_EQ(a.checkpoint.every, b.checkpoint.every);
  EXPECT_EQ(a.log.every, b.log.every);
  EXPECT_EQ(a.log.metrics_jsonl, b.log.metrics_jsonl);
}

TEST_F(ConfigTest, ToYamlRoundTripsAConfigWithEveryValueChanged) {
  const std::string text = R"(
run: {name: "null", dir: "runs: #1", seed: 18446744073709551615}
model: {vocab_size: 1000, seq_len: 33, layers: 5, hidden: 120, heads: 10, mlp_ratio: 3,
        dropout: 0.1, init_std: 0.017}
parallel: {data: 3, tensor: 2, pipeline: 5, spatial: 1, zero_stage: 3, schedule: gpipe,
           dp_bucket_bytes: 25MB}
training: {steps: 77, global_batch: 90, micro_batch: 5, lr: 0.00123456789012345, min_lr: 1e-7,
           warmup_steps: 7, weight_decay: 0.3, beta1: 0.85, beta2: 0.975, eps: 3e-9,
           grad_clip: 0.5, threads: 3, overlap_grad_reduce: false}
data: {kind: markov, seed: 0, branching: 9, concentration: 2.5}
compression:
  preset: zhybrid
  preset_locality: any
  ranks_per_node: 3
  plain_ring_min_bytes: 0
  min_bytes: 0
  chunk_bytes: 12
  error_sample_rate: 0.333
  rules:
    - match: {group: [dp, zero], op: [allreduce, alltoall], role: [gradient, weight],
              min_bytes: 100, max_bytes: 1GiB, locality: intra}
      codec: {name: identity}
      chunk_bytes: 8KiB
    - match: {}
      codec: none
checkpoint: {dir: "", every: 0}
log: {every: 4, metrics_jsonl: false}
)";
  const Config original = load_config(write(text));
  const std::string written = to_yaml(original);
  const Config reloaded = load_config(write(written, "resolved.yaml"));
  expect_same_config(original, reloaded);
  EXPECT_EQ(reloaded.run.name, "null");
  EXPECT_EQ(reloaded.run.dir, "runs: #1");
  EXPECT_EQ(reloaded.checkpoint.dir, "");
  EXPECT_EQ(reloaded.training.lr, 0.00123456789012345);
  // Writing the reloaded config gives the same text, apart from the source named at the top.
  const std::string rewritten = to_yaml(reloaded);
  EXPECT_EQ(written.substr(written.find('\n')), rewritten.substr(rewritten.find('\n')));
}

TEST_F(ConfigTest, ToYamlWritesEveryKeyOfTheDefaults) {
  const Config defaults = load_config(write(""));
  const std::string written = to_yaml(defaults);
  for (const char* key : {"run:",
                          "name:",
                          "seed:",
                          "model:",
                          "vocab_size:",
                          "init_std:",
                          "parallel:",
                          "data: auto",
                          "dp_bucket_bytes: 25MiB",
                          "training:",
                          "warmup_steps:",
                          "threads:",
                          "overlap_grad_reduce: true",
                          "concentration:",
                          "compression:",
                          "preset: none",
                          "preset_locality: inter",
                          "ranks_per_node: 0",
                          "plain_ring_min_bytes: 1MiB",
                          "min_bytes: 64KiB",
                          "error_sample_rate:",
                          "rules: []",
                          "checkpoint:",
                          "every:",
                          "log:",
                          "metrics_jsonl: true"})
    EXPECT_CONTAINS(written, key);
  expect_same_config(defaults, load_config(write(written, "resolved.yaml")));
}

// ----------------------------------------------------------- shipped configs

TEST_F(ConfigTest, EveryFileInConfigsLoadsAndRoundTrips) {
  int loaded = 0;
  for (const auto& entry : fs::directory_iterator("configs")) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    Config c;
    try {
      c = load_config(entry.path().string());
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
      continue;
    }
    expect_same_config(c, load_config(write(to_yaml(c), "resolved.yaml")));
    ++loaded;
  }
  EXPECT_GE(loaded, 2);
}

TEST(ShippedConfigs, TinyIsATwoLayerGptOnMarkovDataForFourRanks) {
  const Config c = load_config("configs/tiny.yaml");
  EXPECT_EQ(c.model.layers, 2);
  EXPECT_EQ(c.model.hidden, 64);
  EXPECT_EQ(c.model.heads, 4);
  EXPECT_EQ(c.data.kind, "markov");
  EXPECT_EQ(validate_layout(c, 4).dp, 4);
  EXPECT_EQ(validate_layout(c, 1).dp, 1);
}

TEST(ShippedConfigs, Gpt20bHasNeoX20bShapeAndGivesDp4On96Ranks) {
  const Config c = load_config("configs/gpt20b.yaml");
  EXPECT_EQ(c.model.layers, 44);
  EXPECT_EQ(c.model.hidden, 6144);
  EXPECT_EQ(c.model.heads, 64);
  EXPECT_EQ(c.model.seq_len, 2048);
  EXPECT_EQ(c.model.vocab_size, 50432);
  const parallel::ParallelDims dims = validate_layout(c, 96);
  EXPECT_EQ(dims.tp, 4);
  EXPECT_EQ(dims.pp, 6);
  EXPECT_EQ(dims.dp, 4);
  EXPECT_EQ(dims.sp, 1);
  const std::string message = error_of([&] { validate_layout(c, 95); });
  EXPECT_CONTAINS(message, "configs/gpt20b.yaml:");
  EXPECT_CONTAINS(message, "parallel.data");
}

}  // namespace
}  // namespace cmpi::trainer
