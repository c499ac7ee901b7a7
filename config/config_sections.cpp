// One function pair per config section: read_X takes the section's keys
// from a MapReader (types, ranges, unknown keys checked key by key) and
// write_X emits every key of it, defaults included, for the resolved
// config.yaml. They sit side by side so a key added to one is seen missing
// from the other; config_round_trip_test checks that every written config
// reads back to the same Config.
#include "config/config_sections.h"

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "config/units.h"
#include "models/cnn/resnet_plan.h"

namespace cmpi::config {
namespace {

RealRange at_least(double min) {
  return {min, std::numeric_limits<double>::max(), false, false};
}
RealRange above(double min) {
  return {min, std::numeric_limits<double>::max(), true, false};
}
RealRange unit_interval_open_top() {
  return {0.0, 1.0, false, true};
}

// Writes one `key: value` pair of an open mapping.
void put(YAML::Emitter& out, const char* key, const std::string& value) {
  out << YAML::Key << key << YAML::Value << value;
}
void put(YAML::Emitter& out, const char* key, int64_t value) {
  put(out, key, std::to_string(value));
}
void put(YAML::Emitter& out, const char* key, uint64_t value) {
  put(out, key, std::to_string(value));
}
void put(YAML::Emitter& out, const char* key, double value) {
  put(out, key, format_real(value));
}
void put(YAML::Emitter& out, const char* key, bool value) {
  out << YAML::Key << key << YAML::Value << value;
}

// parallel.pipeline_balance (`uniform`, `auto` or a list of positive layer
// counts) and its older spelling parallel.stage_layers (`balanced` or a
// list); at most one of them. How the counts relate to parallel.pipeline
// and model.layers is checked in check_consistency.
void read_pipeline_balance(MapReader& r, ParallelConfig& parallel) {
  const YAML::Node balance = r.take("pipeline_balance");
  const YAML::Node legacy = r.take("stage_layers");
  const bool has_balance = balance.IsDefined() && !balance.IsNull();
  const bool has_legacy = legacy.IsDefined() && !legacy.IsNull();
  if (has_balance && has_legacy)
    r.fail("stage_layers",
           "give the split once: parallel.pipeline_balance (uniform, auto or a list) replaces "
           "parallel.stage_layers");
  if (!has_balance && !has_legacy) return;
  const std::string key = has_balance ? "pipeline_balance" : "stage_layers";
  const YAML::Node& node = has_balance ? balance : legacy;
  const std::string expected =
      has_balance ? "`uniform`, `auto` or a list of layer counts per stage, e.g. [3, 1]"
                  : "`balanced` or a list of layer counts per stage, e.g. [3, 1]";
  if (node.IsScalar()) {
    const std::string& word = node.Scalar();
    if (has_legacy && word == "balanced") {
      parallel.pipeline_balance = "uniform";
    } else if (has_balance && (word == "uniform" || word == "auto")) {
      parallel.pipeline_balance = word;
    } else {
      r.fail(key, "expected " + expected);
    }
    parallel.stage_layers.clear();
    return;
  }
  if (!node.IsSequence() || node.size() == 0) r.fail(key, "expected " + expected);
  parallel.stage_layers.clear();
  for (const YAML::Node& item : node) {
    const auto count = item.IsScalar() ? parse_integer(item.Scalar()) : std::nullopt;
    if (!count || *count < 1)
      r.context().fail(r.key_path(key), item,
                       "every stage needs a whole number of layers >= 1, got " +
                           (item.IsScalar() ? "'" + item.Scalar() + "'" : std::string("a list")));
    parallel.stage_layers.push_back(*count);
  }
}

// A string or a list of strings (paths), else an error naming the key.
std::vector<std::string> read_string_list(MapReader& r, const std::string& key) {
  const YAML::Node node = r.take(key);
  if (!node.IsDefined() || node.IsNull()) return {};
  if (node.IsScalar()) return {node.Scalar()};
  if (!node.IsSequence()) r.fail(key, "expected a path or a list of paths");
  std::vector<std::string> out;
  for (const YAML::Node& item : node) {
    if (!item.IsScalar() || item.Scalar().empty())
      r.context().fail(r.key_path(key), item, "every item must be a non-empty path");
    out.push_back(item.Scalar());
  }
  return out;
}

// A list of finite numbers >= 0, else an error naming the key.
std::vector<double> read_ratio_list(MapReader& r, const std::string& key,
                                    std::vector<double> fallback) {
  const YAML::Node node = r.take(key);
  if (!node.IsDefined() || node.IsNull()) return fallback;
  if (!node.IsSequence()) r.fail(key, "expected a list of numbers, e.g. [0.98, 0.02]");
  std::vector<double> out;
  for (const YAML::Node& item : node) {
    const auto value = item.IsScalar() ? parse_real(item.Scalar()) : std::nullopt;
    if (!value || !(*value >= 0) || !std::isfinite(*value))
      r.context().fail(r.key_path(key), item,
                       "every item must be a number >= 0, got " +
                           (item.IsScalar() ? "'" + item.Scalar() + "'" : std::string("a list")));
    out.push_back(*value);
  }
  return out;
}

}  // namespace

// ------------------------------------------------------------------- run

void read_run(MapReader r, RunConfig& run) {
  r.read("name", run.name);
  r.read("dir", run.dir);
  r.read("seed", run.seed);
  r.read("memory_check", run.memory_check);
  r.read("timeout", run.timeout, at_least(0.0));
  if (run.name.find('/') != std::string::npos || run.name == "." || run.name == "..")
    r.fail("name",
           "must be a plain directory name (the run directory is run.dir/run.name), got \"" +
               run.name + "\"");
  r.finish();
}

void write_run(YAML::Emitter& out, const RunConfig& run) {
  put(out, "name", run.name);
  put(out, "dir", run.dir);
  put(out, "seed", uint64_t(run.seed));
  put(out, "memory_check", run.memory_check);
  put(out, "timeout", run.timeout);
}

// ----------------------------------------------------------------- model

void read_model(MapReader r, ModelConfig& model) {
  r.read("kind", model.kind, {"gpt", "resnet"});
  r.read("vocab_size", model.vocab_size, positive());
  r.read("seq_len", model.seq_len, positive());
  r.read("layers", model.layers, positive());
  r.read("hidden", model.hidden, positive());
  r.read("heads", model.heads, positive());
  r.read("mlp_ratio", model.mlp_ratio, positive());
  r.read("dropout", model.dropout, unit_interval_open_top());
  r.read("init_std", model.init_std, above(0.0));
  r.read("tie_embeddings", model.tie_embeddings);
  r.read("position", model.position, {"learned", "rotary"});
  r.read("rotary_pct", model.rotary_pct, RealRange{0.0, 1.0, true, false});
  r.read("rotary_base", model.rotary_base, above(1.0));
  r.read("attention_block_size", model.attention_block_size, non_negative());
  r.read("parallel_residual", model.parallel_residual);
  r.read("mlp_activation", model.mlp_activation, {"gelu", "gelu_tanh"});
  r.read("init", model.init, {"gpt2", "neox"});
  r.read("init_from", model.init_from, {}, /*allow_empty=*/true);
  r.read("depth", model.depth, positive());
  r.read("width", model.width, positive());
  r.read("image_size", model.image_size, IntRange{4, std::numeric_limits<int64_t>::max()});
  r.read("channels", model.channels, positive());
  r.read("classes", model.classes, IntRange{2, std::numeric_limits<int64_t>::max()});
  r.read("activation", model.activation, {"relu", "silu"});
  if (model.kind == "resnet" && (model.depth < 11 || (model.depth - 2) % 9 != 0))
    r.fail("depth", "a ResNet's depth must be 9n + 2 with n >= 1 (11, 20, 29, ..., 110), got " +
                        std::to_string(model.depth));
  r.finish();
}

void write_model(YAML::Emitter& out, const ModelConfig& model) {
  put(out, "kind", model.kind);
  put(out, "vocab_size", int64_t(model.vocab_size));
  put(out, "seq_len", int64_t(model.seq_len));
  put(out, "layers", int64_t(model.layers));
  put(out, "hidden", int64_t(model.hidden));
  put(out, "heads", int64_t(model.heads));
  put(out, "mlp_ratio", int64_t(model.mlp_ratio));
  put(out, "dropout", model.dropout);
  put(out, "init_std", model.init_std);
  put(out, "tie_embeddings", model.tie_embeddings);
  put(out, "position", model.position);
  put(out, "rotary_pct", model.rotary_pct);
  put(out, "rotary_base", model.rotary_base);
  put(out, "attention_block_size", int64_t(model.attention_block_size));
  put(out, "parallel_residual", model.parallel_residual);
  put(out, "mlp_activation", model.mlp_activation);
  put(out, "init", model.init);
  put(out, "init_from", model.init_from);
  put(out, "depth", int64_t(model.depth));
  put(out, "width", int64_t(model.width));
  put(out, "image_size", int64_t(model.image_size));
  put(out, "channels", int64_t(model.channels));
  put(out, "classes", int64_t(model.classes));
  put(out, "activation", model.activation);
}

// -------------------------------------------------------------- parallel

void read_parallel(MapReader r, ParallelConfig& parallel) {
  const IntRange dimension{1, kMaxRanks};
  r.read_or_auto("data", parallel.data, dimension, 0);
  r.read("tensor", parallel.tensor, dimension);
  r.read("pipeline", parallel.pipeline, dimension);
  r.read("spatial", parallel.spatial, dimension);
  r.read("zero_stage", parallel.zero_stage, IntRange{0, 3});
  r.read("zero3_gather", parallel.zero3_gather, {"layer", "model"});
  r.read("zero_gradient_memory", parallel.zero_gradient_memory, {"full_buffer", "shard"});
  r.read("schedule", parallel.schedule, {"gpipe", "1f1b"});
  read_pipeline_balance(r, parallel);
  r.read_size("dp_bucket_bytes", parallel.dp_bucket_bytes);
  r.read("bidirectional", parallel.bidirectional);
  r.read("sequence_parallel", parallel.sequence_parallel);
  r.read("tp_forward_sum", parallel.tp_forward_sum, {"float32", "compute"});
  r.read("spatial_slicing", parallel.spatial_slicing, {"square", "vertical", "horizontal"});
  r.read("spatial_stages", parallel.spatial_stages, IntRange{0, kMaxRanks});
  r.finish();
}

void write_parallel(YAML::Emitter& out, const ParallelConfig& parallel) {
  put(out, "data", parallel.data > 0 ? std::to_string(parallel.data) : std::string("auto"));
  put(out, "tensor", int64_t(parallel.tensor));
  put(out, "pipeline", int64_t(parallel.pipeline));
  put(out, "spatial", int64_t(parallel.spatial));
  put(out, "zero_stage", int64_t(parallel.zero_stage));
  put(out, "zero3_gather", parallel.zero3_gather);
  put(out, "zero_gradient_memory", parallel.zero_gradient_memory);
  put(out, "schedule", parallel.schedule);
  if (parallel.stage_layers.empty()) {
    put(out, "pipeline_balance", parallel.pipeline_balance);
  } else {
    out << YAML::Key << "pipeline_balance" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (int64_t count : parallel.stage_layers) out << count;
    out << YAML::EndSeq;
  }
  put(out, "dp_bucket_bytes", format_size(parallel.dp_bucket_bytes));
  put(out, "spatial_slicing", parallel.spatial_slicing);
  put(out, "spatial_stages", int64_t(parallel.spatial_stages));
  put(out, "bidirectional", parallel.bidirectional);
  put(out, "sequence_parallel", parallel.sequence_parallel);
  put(out, "tp_forward_sum", parallel.tp_forward_sum);
}

// -------------------------------------------------------------- training

void read_training(MapReader r, TrainingConfig& training) {
  r.read("steps", training.steps, positive());
  r.read("global_batch", training.global_batch, positive());
  r.read("micro_batch", training.micro_batch, positive());
  r.read("lr", training.lr, above(0.0));
  r.read("min_lr", training.min_lr, at_least(0.0));
  r.read("warmup_steps", training.warmup_steps, non_negative());
  r.read("weight_decay", training.weight_decay, at_least(0.0));
  r.read("beta1", training.beta1, unit_interval_open_top());
  r.read("beta2", training.beta2, unit_interval_open_top());
  r.read("eps", training.eps, above(0.0));
  r.read("grad_clip", training.grad_clip, at_least(0.0));
  r.read("threads", training.threads, IntRange{1, 1024});
  r.read("overlap_grad_reduce", training.overlap_grad_reduce);
  r.read("on_nonfinite", training.on_nonfinite, {"abort", "skip_step"});
  r.read("max_skipped_steps", training.max_skipped_steps, positive());
  r.read("precision", training.precision, {"fp32", "bf16", "fp16"});
  r.read("loss_scale_initial", training.loss_scale_initial, RealRange{1.0, 1e30});
  r.read("loss_scale_growth_interval", training.loss_scale_growth_interval, positive());
  r.read("loss_scale_backoff", training.loss_scale_backoff, RealRange{0.0, 1.0, true, true});
  r.read("loss_scale_min", training.loss_scale_min, RealRange{1.0, 1e30});
  if (training.loss_scale_min > training.loss_scale_initial)
    r.fail("loss_scale_min", "must not exceed training.loss_scale_initial (" +
                                 std::to_string(training.loss_scale_initial) + "), got " +
                                 std::to_string(training.loss_scale_min));
  r.read("recompute", training.recompute, {"none", "selective", "full"});
  r.read("recompute_layers", training.recompute_layers, non_negative());
  r.finish();
}

void write_training(YAML::Emitter& out, const TrainingConfig& training) {
  put(out, "steps", int64_t(training.steps));
  put(out, "global_batch", int64_t(training.global_batch));
  put(out, "micro_batch", int64_t(training.micro_batch));
  put(out, "lr", training.lr);
  put(out, "min_lr", training.min_lr);
  put(out, "warmup_steps", int64_t(training.warmup_steps));
  put(out, "weight_decay", training.weight_decay);
  put(out, "beta1", training.beta1);
  put(out, "beta2", training.beta2);
  put(out, "eps", training.eps);
  put(out, "grad_clip", training.grad_clip);
  put(out, "threads", int64_t(training.threads));
  put(out, "overlap_grad_reduce", training.overlap_grad_reduce);
  put(out, "on_nonfinite", training.on_nonfinite);
  put(out, "max_skipped_steps", int64_t(training.max_skipped_steps));
  put(out, "precision", training.precision);
  put(out, "loss_scale_initial", training.loss_scale_initial);
  put(out, "loss_scale_growth_interval", int64_t(training.loss_scale_growth_interval));
  put(out, "loss_scale_backoff", training.loss_scale_backoff);
  put(out, "loss_scale_min", training.loss_scale_min);
  put(out, "recompute", training.recompute);
  put(out, "recompute_layers", int64_t(training.recompute_layers));
}

// ------------------------------------------------------------------ data

void read_data(MapReader r, DataConfig& data) {
  r.read("kind", data.kind, {"markov", "indexed", "images"});
  r.read("seed", data.seed);
  r.read("branching", data.branching, positive());
  r.read("concentration", data.concentration, above(0.0));
  data.paths = read_string_list(r, "paths");
  data.weights = read_ratio_list(r, "weights", {});
  data.split = read_ratio_list(r, "split", data.split);
  r.read("cache_dir", data.cache_dir, {}, /*allow_empty=*/true);
  r.read("tokenizer", data.tokenizer, {}, /*allow_empty=*/true);
  r.read("noise", data.noise, at_least(0.0));
  if (data.kind == "indexed" && data.paths.empty())
    r.fail("paths",
           "data.kind indexed needs a dataset prefix (PREFIX.bin + PREFIX.idx) or a list of them");
  if (data.kind != "indexed" && !data.paths.empty())
    r.fail("paths", "is read only with data.kind: indexed (data.kind is " + data.kind + ")");
  if (!data.weights.empty() && data.weights.size() != data.paths.size())
    r.fail("weights", "needs one weight per entry of data.paths (" +
                          std::to_string(data.paths.size()) + "), got " +
                          std::to_string(data.weights.size()));
  double weight_sum = 0;
  for (double w : data.weights) weight_sum += w;
  if (!data.weights.empty() && !(weight_sum > 0)) r.fail("weights", "must not all be 0");
  if (data.split.size() != 2)
    r.fail("split", "expected the train and valid shares of the documents, e.g. [0.98, 0.02]");
  if (!(data.split[0] > 0)) r.fail("split", "the train share (first item) must be > 0");
  r.finish();
}

void write_data(YAML::Emitter& out, const DataConfig& data) {
  put(out, "kind", data.kind);
  put(out, "seed", uint64_t(data.seed));
  put(out, "branching", int64_t(data.branching));
  put(out, "concentration", data.concentration);
  out << YAML::Key << "paths" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const std::string& path : data.paths) out << YAML::DoubleQuoted << path;
  out << YAML::EndSeq;
  for (const auto& [key, list] :
       {std::pair<const char*, const std::vector<double>*>{"weights", &data.weights},
        {"split", &data.split}}) {
    out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (double value : *list) out << format_real(value);
    out << YAML::EndSeq;
  }
  put(out, "cache_dir", data.cache_dir);
  put(out, "tokenizer", data.tokenizer);
  put(out, "noise", data.noise);
}

// ------------------------------------------------------------------ eval

void read_eval(MapReader r, EvalConfig& eval) {
  r.read("every", eval.every, non_negative());
  r.read("batches", eval.batches, positive());
  r.finish();
}

void write_eval(YAML::Emitter& out, const EvalConfig& eval) {
  put(out, "every", int64_t(eval.every));
  put(out, "batches", int64_t(eval.batches));
}

// ------------------------------------------------------------ checkpoint

void read_checkpoint(MapReader r, CheckpointConfig& checkpoint) {
  r.read("dir", checkpoint.dir, {}, /*allow_empty=*/true);
  r.read("every", checkpoint.every, non_negative());
  r.read("keep_last", checkpoint.keep_last, non_negative());
  r.read("async", checkpoint.async);
  r.finish();
}

void write_checkpoint(YAML::Emitter& out, const CheckpointConfig& checkpoint) {
  put(out, "dir", checkpoint.dir);
  put(out, "every", int64_t(checkpoint.every));
  put(out, "keep_last", int64_t(checkpoint.keep_last));
  put(out, "async", checkpoint.async);
}

// ------------------------------------------------------------------- log

void read_log(MapReader r, LogConfig& log) {
  r.read("every", log.every, positive());
  r.read("metrics_jsonl", log.metrics_jsonl);
  r.finish();
}

void write_log(YAML::Emitter& out, const LogConfig& log) {
  put(out, "every", int64_t(log.every));
  put(out, "metrics_jsonl", log.metrics_jsonl);
}

}  // namespace cmpi::config
