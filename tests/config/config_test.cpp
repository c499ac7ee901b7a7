// Config loading: defaults, --set overrides, one test per class of bad input
// (each checking that the message names the key, the file and the line), the
// layout and the shipped configs.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "comm/auto_deadline.h"
#include "compress/codec_registry.h"
#include "config/config_loader.h"
#include "tests/config/config_test_support.h"

namespace cmpi::config {
namespace {

using namespace config_testing;

// ------------------------------------------------------------------ defaults

TEST_F(ConfigTest, EmptyMappingGivesTheDefaultsOfEverySection) {
  const Config c = load_checked_config(write("{}\n"));
  const Config defaults;
  EXPECT_EQ(c.run.name, defaults.run.name);
  EXPECT_EQ(c.model.layers, defaults.model.layers);
  EXPECT_EQ(c.model.hidden, defaults.model.hidden);
  EXPECT_EQ(c.parallel.data, 0) << "data defaults to auto";
  EXPECT_STREQ(config::name_of(c.parallel.schedule), "1f1b");
  EXPECT_EQ(c.parallel.dp_bucket_bytes, 25LL << 20);
  EXPECT_EQ(c.training.micro_batch, defaults.training.micro_batch);
  EXPECT_DOUBLE_EQ(c.training.lr, defaults.training.lr);
  EXPECT_STREQ(config::name_of(c.data.kind), "markov");
  EXPECT_EQ(c.compression.preset, "none");
  EXPECT_EQ(c.compression.min_bytes, 64 << 10);
  EXPECT_TRUE(c.compression.rules.empty());
  EXPECT_EQ(c.checkpoint.every, 0);
  EXPECT_EQ(c.log.every, 10);
  EXPECT_TRUE(c.log.metrics_jsonl);
  EXPECT_TRUE(c.training.overlap_grad_reduce);
  EXPECT_TRUE(c.origins.empty());
  EXPECT_EQ(c.run.timeout, RunConfig::kAutoTimeout) << "run.timeout defaults to auto";
  EXPECT_EQ(c.run.timeout_floor, comm::AutoDeadline::kDefaultFloorSeconds);
}

// run.timeout: auto (the default) or seconds; auto written back as auto.
TEST_F(ConfigTest, TimeoutIsAutoOrSeconds) {
  EXPECT_EQ(load_checked_config(write("run: {timeout: 7.5}\n")).run.timeout, 7.5);
  EXPECT_EQ(load_checked_config(write("run: {timeout: 0}\n")).run.timeout, 0.0);
  const Config automatic = load_checked_config(write("run: {timeout: auto, timeout_floor: 3}\n"));
  EXPECT_EQ(automatic.run.timeout, RunConfig::kAutoTimeout);
  EXPECT_EQ(automatic.run.timeout_floor, 3.0);
  const std::string text = to_yaml(automatic);
  EXPECT_NE(text.find("timeout: auto\n"), std::string::npos) << text;
  EXPECT_NE(text.find("timeout_floor: 3\n"), std::string::npos) << text;
}

// run.device: cpu (the default), cuda or auto; anything else is refused
// naming the key, its file and line, and the spellings.
TEST_F(ConfigTest, DeviceIsCpuCudaOrAuto) {
  EXPECT_EQ(load_checked_config(write("{}")).run.device, RunDevice::kCpu);
  EXPECT_EQ(load_checked_config(write("run: {device: cuda}\n")).run.device, RunDevice::kCuda);
  EXPECT_EQ(load_checked_config(write("run: {device: auto}\n")).run.device, RunDevice::kAuto);
  const std::string path = write("run:\n  device: gpu\n");
  const std::string message = error_of([&] { load_checked_config(path); });
  EXPECT_NE(message.find("run.device"), std::string::npos) << message;
  EXPECT_NE(message.find(path + ":2"), std::string::npos) << message;
  EXPECT_NE(message.find("cuda"), std::string::npos) << message;
}

TEST_F(ConfigTest, KeysLeftOutKeepTheirDefaultsAndEmptySectionsAreAllowed) {
  const std::string text = "model:\n  layers: 3\nlog:\ntraining:\n  lr: 0.01\n";
  const std::string path = write(text);
  const Config c = load_checked_config(path);
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
  const Config c = load_checked_config(write(R"(
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
  EXPECT_STREQ(config::name_of(c.parallel.schedule), "gpipe");
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
  const Config c = load_checked_config(
      path, {"training.lr=0.01", "compression.min_bytes=1MiB", "parallel.data=2", "log.every=5",
             "model.heads=8", "compression.preset=zhybrid"});
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
  const Config c = load_checked_config(
      path, {"training.steps=50", "training.steps=60", "compression.rules[0].match.group=[tp, pp]",
             "compression.rules[0].chunk_bytes=64KiB"});
  EXPECT_EQ(c.training.steps, 60);
  ASSERT_EQ(c.compression.rules.size(), 1u);
  EXPECT_EQ(c.compression.rules[0].match.groups,
            (std::vector<comm::GroupKind>{comm::GroupKind::kTp, comm::GroupKind::kPp}));
  EXPECT_EQ(c.compression.rules[0].chunk_bytes, 64 << 10);
  EXPECT_EQ(c.compression.rules[0].origin, path + ":3");

  const Config replaced =
      load_checked_config(path, {"compression.rules=[{match: {op: allgather}, codec: none}]"});
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
  expect_error_at(text, "colour", "log.colour",
                  "known keys in log: every, metrics_jsonl, tensorboard");
  expect_error_at("modle:\n  layers: 2\n", "modle", "modle", "did you mean model?");
}

TEST_F(ConfigTest, DuplicatedKeyIsAnError) {
  const std::string text = "training:\n  steps: 10\n  steps: 20\n";
  const std::string path = write(text);
  const std::string message = error_of([&] { load_checked_config(path); });
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
      {"run:\n  timeout: soon\n", "soon", "run.timeout",
       "expected auto or a number >= 0, got \"soon\""},
      {"run:\n  timeout: -5\n", "-5", "run.timeout", "expected auto or a number >= 0, got -5"},
      {"run:\n  timeout_floor: 0\n", "0", "run.timeout_floor", "expected a number > 0, got 0"},
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
      {"data:\n  kind: tokens\n", "kind", "data.kind",
       "expected one of markov, indexed, images, got \"tokens\""},
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
      {"model:\n  seq_len: 30\nparallel:\n  tensor: 4\n  sequence_parallel: true\n",
       "sequence_parallel", "parallel.sequence_parallel",
       "splits every sequence over the parallel.tensor (4) ranks, so model.seq_len (30) must be "
       "divisible by it"},
      {"model:\n  kind: resnet\ndata:\n  kind: images\nparallel:\n  sequence_parallel: true\n",
       "sequence_parallel", "parallel.sequence_parallel",
       "model.kind resnet has no tensor parallelism"},
      // head_dim 16 x 0.1 -> 1 dimension: rotary turns pairs.
      {"model:\n  position: rotary\n  rotary_pct: 0.1\n", "rotary_pct", "model.rotary_pct",
       "rotates head_dim x rotary_pct = 16 x 0.1 -> 1 dimensions per head"},
      {"model:\n  position: rope\n", "position", "model.position",
       "expected one of learned, rotary"},
      {"model:\n  rotary_pct: 0\n", "rotary_pct", "model.rotary_pct",
       "expected a number in (0, 1]"},
      {"model:\n  mlp_activation: relu\n", "mlp_activation", "model.mlp_activation",
       "expected one of gelu, gelu_tanh"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.yaml);
    expect_error_at(c.yaml, c.needle, c.key, c.detail);
  }
}

TEST_F(ConfigTest, InvalidYamlAndMissingFileNameTheFile) {
  const std::string path = write("training:\n  lr: [0.1\n");
  std::string message = error_of([&] { load_checked_config(path); });
  EXPECT_EQ(message.rfind(path + ":", 0), 0u) << message;
  EXPECT_CONTAINS(message, "not valid YAML");

  const std::string missing = (dir_ / "nope.yaml").string();
  message = error_of([&] { load_checked_config(missing); });
  EXPECT_EQ(message, missing + ": cannot open the config file: No such file or directory");
  EXPECT_EQ(error_of([&] { load_checked_config(dir_.string()); }),
            dir_.string() + ": is a directory, not a config file");
}

// -------------------------------------------------------------------- layout

TEST_F(ConfigTest, LayoutResolvesDataParallelFromTheWorldSize) {
  const Config c = load_checked_config(write("parallel:\n  data: auto\n  tensor: 2\n"));
  const parallel::ParallelDims dims = validate_layout(c, 8);
  EXPECT_EQ(dims.dp, 4);
  EXPECT_EQ(dims.tp, 2);
  EXPECT_EQ(dims.pp, 1);
}

TEST_F(ConfigTest, LayoutThatDoesNotDivideTheWorldSizeNamesTheParallelKeys) {
  const std::string text = "model:\n  heads: 4\nparallel:\n  data: auto\n  tensor: 4\n";
  const std::string path = write(text);
  const Config c = load_checked_config(path);
  std::string message = error_of([&] { validate_layout(c, 6); });
  EXPECT_EQ(
      message.rfind(path + ":" + std::to_string(line_of(text, "data")) + ": parallel.data: ", 0),
      0u)
      << message;
  EXPECT_CONTAINS(
      message, "parallel (data: auto, tensor: 4, pipeline: 1, spatial: 1, context: 1) on 6 ranks");
  EXPECT_CONTAINS(message, "world size 6 is not divisible by");

  const std::string fixed_text = "parallel:\n  data: 2\n  tensor: 2\n";
  const std::string fixed_path = write(fixed_text, "fixed.yaml");
  const Config fixed = load_checked_config(fixed_path);
  message = error_of([&] { validate_layout(fixed, 8); });
  EXPECT_EQ(message.rfind(fixed_path + ":2: parallel.data: ", 0), 0u) << message;
  EXPECT_CONTAINS(message, "but the world has 8");
  EXPECT_EQ(validate_layout(fixed, 4).dp, 2);
}

// parallel.data left out (auto): a dp error points at the first layout key
// the user wrote, in the section's order, and the text names every size.
TEST_F(ConfigTest, DataParallelErrorWithoutADataKeyPointsAtTheWrittenLayoutKey) {
  const std::string text = "model:\n  layers: 4\nparallel:\n  pipeline: 4\n";
  const std::string path = write(text);
  const Config c = load_checked_config(path);
  const std::string message = error_of([&] { validate_layout(c, 6); });
  EXPECT_EQ(message.rfind(path + ":4: parallel.pipeline: ", 0), 0u) << message;
  EXPECT_CONTAINS(
      message, "parallel (data: auto, tensor: 1, pipeline: 4, spatial: 1, context: 1) on 6 ranks");
  EXPECT_CONTAINS(message, "dp group: world size 6 is not divisible by");

  const std::string both = "parallel:\n  data: 3\n  spatial: 1\n  tensor: 2\n";
  const std::string both_path = write(both, "both.yaml");
  const std::string both_message =
      error_of([&] { validate_layout(load_checked_config(both_path), 4); });
  EXPECT_EQ(both_message.rfind(both_path + ":2: parallel.data: ", 0), 0u) << both_message;
  EXPECT_CONTAINS(both_message,
                  "parallel (data: 3, tensor: 2, pipeline: 1, spatial: 1, context: 1)");
}

// parallel.context: a sequence that does not cut into 2 x context chunks is
// refused at the key, naming both values.
TEST_F(ConfigTest, ContextThatDoesNotCutTheSequenceIsRefusedAtItsKey) {
  const std::string text = "model:\n  seq_len: 20\nparallel:\n  context: 4\n";
  const std::string path = write(text);
  // Refused when the file is read: no world size fits it.
  const std::string message = error_of([&] { load_checked_config(path); });
  EXPECT_EQ(message.rfind(path + ":4: parallel.context: ", 0), 0u) << message;
  EXPECT_CONTAINS(message, "model.seq_len (20) is not divisible by 2 x parallel.context (8)");
  EXPECT_EQ(
      validate_layout(load_checked_config(write("parallel:\n  context: 2\n", "ok.yaml")), 4).cp, 2);
}

TEST_F(ConfigTest, HeadsNotDivisibleByTensorParallelismIsAnError) {
  const std::string text = "model:\n  heads: 4\n  hidden: 48\nparallel:\n  tensor: 3\n";
  expect_error_at(text, "tensor", "parallel.tensor",
                  "tp group: model.heads (4) is not divisible by parallel.tensor (3)");
}

TEST_F(ConfigTest, GlobalBatchMustSplitOverMicroBatchesAndDataParallelRanks) {
  const std::string text = "training:\n  global_batch: 32\n  micro_batch: 8\n";
  const std::string path = write(text);
  const Config c = load_checked_config(path);
  EXPECT_EQ(validate_layout(c, 2).dp, 2);
  EXPECT_EQ(validate_layout(c, 4).dp, 4);
  const std::string message = error_of([&] { validate_layout(c, 3); });
  EXPECT_EQ(message.rfind(path + ":2: training.global_batch: ", 0), 0u) << message;
  EXPECT_CONTAINS(message, "multiple of training.micro_batch x dp = 24");
  EXPECT_CONTAINS(error_of([&] { validate_layout(c, 0); }), "world size must be >= 1");
}

}  // namespace
}  // namespace cmpi::config
