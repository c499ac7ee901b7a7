// to_yaml writes every key, and what it writes loads back into an equal
// Config; every shipped config loads and round-trips.
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "config/config_loader.h"
#include "tests/config/config_test_support.h"

namespace cmpi::config {
namespace {

using namespace config_testing;

// ----------------------------------------------------------------- round trip

void expect_same_config(const Config& a, const Config& b) {
  EXPECT_EQ(a.run.name, b.run.name);
  EXPECT_EQ(a.run.dir, b.run.dir);
  EXPECT_EQ(a.run.seed, b.run.seed);
  EXPECT_EQ(a.run.memory_check, b.run.memory_check);
  EXPECT_EQ(a.run.timeout, b.run.timeout);
  EXPECT_EQ(a.run.timeout_floor, b.run.timeout_floor);
  EXPECT_EQ(a.run.peak_flops, b.run.peak_flops);
  EXPECT_EQ(a.run.device, b.run.device);
  EXPECT_EQ(a.model.vocab_size, b.model.vocab_size);
  EXPECT_EQ(a.model.seq_len, b.model.seq_len);
  EXPECT_EQ(a.model.layers, b.model.layers);
  EXPECT_EQ(a.model.hidden, b.model.hidden);
  EXPECT_EQ(a.model.heads, b.model.heads);
  EXPECT_EQ(a.model.mlp_ratio, b.model.mlp_ratio);
  EXPECT_EQ(a.model.dropout, b.model.dropout);
  EXPECT_EQ(a.model.init_std, b.model.init_std);
  EXPECT_EQ(a.model.tie_embeddings, b.model.tie_embeddings);
  EXPECT_EQ(a.model.position, b.model.position);
  EXPECT_EQ(a.model.rotary_pct, b.model.rotary_pct);
  EXPECT_EQ(a.model.rotary_base, b.model.rotary_base);
  EXPECT_EQ(a.model.parallel_residual, b.model.parallel_residual);
  EXPECT_EQ(a.model.mlp_activation, b.model.mlp_activation);
  EXPECT_EQ(a.model.init, b.model.init);
  EXPECT_EQ(a.parallel.data, b.parallel.data);
  EXPECT_EQ(a.parallel.tensor, b.parallel.tensor);
  EXPECT_EQ(a.parallel.pipeline, b.parallel.pipeline);
  EXPECT_EQ(a.parallel.spatial, b.parallel.spatial);
  EXPECT_EQ(a.parallel.zero_stage, b.parallel.zero_stage);
  EXPECT_EQ(a.parallel.zero_gradient_memory, b.parallel.zero_gradient_memory);
  EXPECT_EQ(a.parallel.schedule, b.parallel.schedule);
  EXPECT_EQ(a.parallel.dp_bucket_bytes, b.parallel.dp_bucket_bytes);
  EXPECT_EQ(a.parallel.tp_forward_sum, b.parallel.tp_forward_sum);
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
  EXPECT_EQ(a.training.on_nonfinite, b.training.on_nonfinite);
  EXPECT_EQ(a.training.max_skipped_steps, b.training.max_skipped_steps);
  EXPECT_EQ(a.data.kind, b.data.kind);
  EXPECT_EQ(a.data.seed, b.data.seed);
  EXPECT_EQ(a.data.branching, b.data.branching);
  EXPECT_EQ(a.data.concentration, b.data.concentration);
  EXPECT_EQ(a.data.paths, b.data.paths);
  EXPECT_EQ(a.data.weights, b.data.weights);
  EXPECT_EQ(a.data.split, b.data.split);
  EXPECT_EQ(a.data.cache_dir, b.data.cache_dir);
  EXPECT_EQ(a.data.tokenizer, b.data.tokenizer);
  EXPECT_EQ(a.eval.every, b.eval.every);
  EXPECT_EQ(a.eval.batches, b.eval.batches);
  EXPECT_EQ(a.compression.preset, b.compression.preset);
  EXPECT_EQ(a.compression.min_bytes, b.compression.min_bytes);
  EXPECT_EQ(a.compression.chunk_bytes, b.compression.chunk_bytes);
  EXPECT_EQ(a.compression.error_sample_rate, b.compression.error_sample_rate);
  EXPECT_EQ(a.compression.preset_locality, b.compression.preset_locality);
  EXPECT_EQ(a.compression.ranks_per_node, b.compression.ranks_per_node);
  EXPECT_EQ(a.compression.plain_ring_min_bytes, b.compression.plain_ring_min_bytes);
  EXPECT_EQ(a.compression.sparse_embedding, b.compression.sparse_embedding);
  ASSERT_EQ(a.compression.rules.size(), b.compression.rules.size());
  for (size_t i = 0; i < a.compression.rules.size(); ++i) {
    const comm::PolicyRule& x = a.compression.rules[i];
    const comm::PolicyRule& y = b.compression.rules[i];
    EXPECT_EQ(x.match.groups, y.match.groups) << "rule " << i;
    EXPECT_EQ(x.match.ops, y.match.ops) << "rule " << i;
    EXPECT_EQ(x.match.roles, y.match.roles) << "rule " << i;
    EXPECT_EQ(x.match.localities, y.match.localities) << "rule " << i;
    EXPECT_EQ(x.match.words, y.match.words) << "rule " << i;
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
  EXPECT_EQ(a.checkpoint.keep_last, b.checkpoint.keep_last);
  EXPECT_EQ(a.checkpoint.async, b.checkpoint.async);
  EXPECT_EQ(a.log.every, b.log.every);
  EXPECT_EQ(a.log.metrics_jsonl, b.log.metrics_jsonl);
  EXPECT_EQ(a.log.tensorboard, b.log.tensorboard);
}

TEST_F(ConfigTest, ToYamlRoundTripsAConfigWithEveryValueChanged) {
  const std::string text = R"(
run: {name: "null", dir: "runs: #1", seed: 18446744073709551615, memory_check: false,
      timeout: 7.5, timeout_floor: 4.5, peak_flops: a100, device: auto}
model: {vocab_size: 1000, seq_len: 33, layers: 5, hidden: 120, heads: 10, mlp_ratio: 3,
        dropout: 0.1, init_std: 0.017, tie_embeddings: false, position: rotary,
        rotary_pct: 0.5, rotary_base: 500.5, parallel_residual: true,
        mlp_activation: gelu_tanh, init: neox}
parallel: {data: 3, tensor: 2, pipeline: 5, spatial: 1, zero_stage: 3, schedule: gpipe,
           dp_bucket_bytes: 25MB, zero_gradient_memory: shard, tp_forward_sum: compute}
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
  sparse_embedding: "off"
  rules:
    - match: {group: [dp, zero], op: [allreduce, alltoall], role: [gradient, weight],
              min_bytes: 100, max_bytes: 1GiB, locality: intra}
      codec: {name: identity}
      chunk_bytes: 8KiB
    - match: {group: tp, word: [bf16, fp16]}
      codec: {name: fp8, format: e5m2, block: 64}
    - match: {}
      codec: none
checkpoint: {dir: "", every: 0, keep_last: 5, async: true}
log: {every: 4, metrics_jsonl: false, tensorboard: true}
)";
  const Config original = load_checked_config(write(text));
  const std::string written = to_yaml(original);
  const Config reloaded = load_checked_config(write(written, "resolved.yaml"));
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
  const Config defaults = load_checked_config(write("{}"));
  const std::string written = to_yaml(defaults);
  for (const char* key : {"run:",
                          "name:",
                          "seed:",
                          "memory_check: true",
                          "timeout: auto",
                          "timeout_floor:",
                          "peak_flops: auto",
                          "device: cpu",
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
                          "sparse_embedding: auto",
                          "tie_embeddings: true",
                          "position: learned",
                          "rotary_pct: 0.25",
                          "rotary_base:",
                          "parallel_residual: false",
                          "mlp_activation: gelu",
                          "init: gpt2",
                          "rules: []",
                          "checkpoint:",
                          "every:",
                          "async: false",
                          "log:",
                          "metrics_jsonl: true",
                          "tensorboard: false"})
    EXPECT_CONTAINS(written, key);
  expect_same_config(defaults, load_checked_config(write(written, "resolved.yaml")));
}

// ----------------------------------------------------------- shipped configs

TEST_F(ConfigTest, EveryFileInConfigsLoadsAndRoundTrips) {
  int loaded = 0;
  for (const auto& entry : fs::directory_iterator("configs")) {
    if (entry.path().extension() != ".yaml" && entry.path().extension() != ".yml") continue;
    SCOPED_TRACE(entry.path().string());
    Config c;
    try {
      c = load_checked_config(entry.path().string());
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
      continue;
    }
    expect_same_config(c, load_checked_config(write(to_yaml(c), "resolved.yaml")));
    ++loaded;
  }
  EXPECT_GE(loaded, 2);
}

TEST(ShippedConfigs, TinyIsATwoLayerGptOnMarkovDataForFourRanks) {
  const Config c = load_checked_config("configs/tiny.yaml");
  EXPECT_EQ(c.model.layers, 2);
  EXPECT_EQ(c.model.hidden, 64);
  EXPECT_EQ(c.model.heads, 4);
  EXPECT_STREQ(config::name_of(c.data.kind), "markov");
  EXPECT_EQ(validate_layout(c, 4).dp, 4);
  EXPECT_EQ(validate_layout(c, 1).dp, 1);
}

TEST(ShippedConfigs, Gpt20bHasNeoX20bShapeAndGivesDp4On96Ranks) {
  const Config c = load_checked_config("configs/gpt20b.yaml");
  EXPECT_EQ(c.model.layers, 44);
  EXPECT_EQ(c.model.hidden, 6144);
  EXPECT_EQ(c.model.heads, 64);
  EXPECT_EQ(c.model.seq_len, 2048);
  EXPECT_EQ(c.model.vocab_size, 50432);
  EXPECT_FALSE(c.model.tie_embeddings);  // GPT-NeoX-20B's output head is its own
  EXPECT_EQ(c.model.position, "rotary");
  EXPECT_EQ(c.model.rotary_pct, 0.25);
  EXPECT_EQ(c.model.rotary_base, 10000.0);
  EXPECT_TRUE(c.model.parallel_residual);
  EXPECT_EQ(c.model.mlp_activation, "gelu_tanh");
  EXPECT_EQ(c.model.init, "neox");
  EXPECT_EQ(c.checkpoint.every, 500);  // as the published run
  EXPECT_STREQ(config::name_of(c.training.precision),
               "fp16");  // as the published run, with loss scaling
  EXPECT_EQ(c.training.loss_scale_initial, 4096.0);
  EXPECT_EQ(c.training.recompute, "full");  // the published run's activation checkpointing
  EXPECT_STREQ(config::name_of(c.data.kind), "indexed");  // the corpus a user fills in
  const parallel::ParallelDims dims = validate_layout(c, 96);
  EXPECT_EQ(dims.tp, 4);
  EXPECT_EQ(dims.pp, 6);
  EXPECT_EQ(dims.dp, 4);
  EXPECT_EQ(dims.sp, 1);
  const std::string message = error_of([&] { validate_layout(c, 95); });
  EXPECT_CONTAINS(message, "configs/gpt20b.yaml:");
  EXPECT_CONTAINS(message, "parallel.data");
}

// GPT-NeoX-20B's architecture at a size that trains on the KJV text.
TEST(ShippedConfigs, NeoxScaledHasTheNeoX20bArchitecture) {
  const Config c = load_checked_config("configs/neox-scaled.yaml");
  const Config big = load_checked_config("configs/gpt20b.yaml");
  EXPECT_EQ(c.model.position, big.model.position);
  EXPECT_EQ(c.model.rotary_pct, big.model.rotary_pct);
  EXPECT_EQ(c.model.rotary_base, big.model.rotary_base);
  EXPECT_EQ(c.model.parallel_residual, big.model.parallel_residual);
  EXPECT_EQ(c.model.mlp_activation, big.model.mlp_activation);
  EXPECT_EQ(c.model.init, big.model.init);
  EXPECT_EQ(c.model.tie_embeddings, big.model.tie_embeddings);
  EXPECT_STREQ(config::name_of(c.data.kind), "indexed");
}

}  // namespace
}  // namespace cmpi::config

namespace cmpi::config {
namespace {

// The resolved config's numbers: whole numbers without an exponent (a
// timeout of 1800 was written 1.8e+03), ordinary magnitudes in plain
// decimals, the extremes with one; each reads back to the same double.
TEST(RealFormatting, IsReadableAndReadsBackExactly) {
  EXPECT_EQ(format_real(1800), "1800");
  EXPECT_EQ(format_real(150000), "150000");
  EXPECT_EQ(format_real(4096), "4096");
  EXPECT_EQ(format_real(10000), "10000");
  EXPECT_EQ(format_real(0.25), "0.25");
  EXPECT_EQ(format_real(0.0003), "0.0003");
  EXPECT_EQ(format_real(0.1), "0.1");
  EXPECT_EQ(format_real(0), "0");
  EXPECT_EQ(format_real(-2.5), "-2.5");
  EXPECT_EQ(format_real(9.7e-05), "9.7e-05");
  EXPECT_EQ(format_real(1e-8), "1e-08");
  EXPECT_EQ(format_real(1e30), "1e+30");
  for (double value : {1800.0, 0.1, 1.0 / 3.0, 2.0 / 3.0 * 1e7, 123456789012345.6, 9.7e-05, 0.97e-4,
                       1e-300, 1.7976931348623157e308, 2.2250738585072014e-308, 4503599627370497.0,
                       -0.0, 1e15, 1e16, 0.0001, 0.00009999})
    EXPECT_EQ(*parse_real(format_real(value)), value) << format_real(value);
}

TEST_F(ConfigTest, ResolvedTimeoutIsWrittenAsAWholeNumber) {
  const Config c = parse_checked_config("run: {timeout: 1800}\n", "t.yaml");
  const std::string text = to_yaml(c);
  EXPECT_NE(text.find("timeout: 1800\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("e+03"), std::string::npos) << text;
}

}  // namespace
}  // namespace cmpi::config
