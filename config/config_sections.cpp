// Each config section lists its keys once (X_fields below, in the order the
// resolved config.yaml writes them); read_X runs the list with a FieldReader
// (types, ranges, unknown keys checked key by key) and then the section's
// own cross-key checks, write_X runs it with a FieldWriter (every key,
// defaults included). config_round_trip_test checks that every written
// config reads back to the same Config.
#include "config/config_sections.h"

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "config/section_fields.h"
#include "config/units.h"

namespace cmpi::config {

// parallel.pipeline_balance (`uniform`, `auto` or a list of positive layer
// counts) and its older spelling parallel.stage_layers (`balanced` or a
// list); at most one of them. How the counts relate to parallel.pipeline
// and model.layers is checked in check_consistency.
void FieldReader::pipeline_balance(ParallelConfig& parallel) {
  MapReader& r = r_;
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
void FieldReader::paths(const char* key, std::vector<std::string>& value) {
  MapReader& r = r_;
  const YAML::Node node = r.take(key);
  value.clear();
  if (!node.IsDefined() || node.IsNull()) return;
  if (node.IsScalar()) {
    value.push_back(node.Scalar());
    return;
  }
  if (!node.IsSequence()) r.fail(key, "expected a path or a list of paths");
  for (const YAML::Node& item : node) {
    if (!item.IsScalar() || item.Scalar().empty())
      r.context().fail(r.key_path(key), item, "every item must be a non-empty path");
    value.push_back(item.Scalar());
  }
}

// A list of finite numbers >= 0, else an error naming the key.
void FieldReader::ratios(const char* key, std::vector<double>& value) {
  MapReader& r = r_;
  const YAML::Node node = r.take(key);
  if (!node.IsDefined() || node.IsNull()) return;
  if (!node.IsSequence()) r.fail(key, "expected a list of numbers, e.g. [0.98, 0.02]");
  std::vector<double> out;
  for (const YAML::Node& item : node) {
    const auto parsed = item.IsScalar() ? parse_real(item.Scalar()) : std::nullopt;
    if (!parsed || !(*parsed >= 0) || !std::isfinite(*parsed))
      r.context().fail(r.key_path(key), item,
                       "every item must be a number >= 0, got " +
                           (item.IsScalar() ? "'" + item.Scalar() + "'" : std::string("a list")));
    out.push_back(*parsed);
  }
  value = std::move(out);
}

void FieldWriter::paths(const char* key, const std::vector<std::string>& value) {
  out_ << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const std::string& path : value) out_ << YAML::DoubleQuoted << path;
  out_ << YAML::EndSeq;
}

void FieldWriter::ratios(const char* key, const std::vector<double>& value) {
  out_ << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (double ratio : value) out_ << format_real(ratio);
  out_ << YAML::EndSeq;
}

void FieldWriter::pipeline_balance(const ParallelConfig& parallel) {
  if (parallel.stage_layers.empty()) {
    put("pipeline_balance", parallel.pipeline_balance);
    return;
  }
  out_ << YAML::Key << "pipeline_balance" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (int64_t count : parallel.stage_layers) out_ << count;
  out_ << YAML::EndSeq;
}

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

// Each section's keys, once: `f` is a FieldReader (Section non-const) or a
// FieldWriter (Section const).

template <class Fields, class Section>
void run_fields(Fields& f, Section& run) {
  f.text("name", run.name);
  f.text("dir", run.dir);
  f.unsigned_integer("seed", run.seed);
  f.flag("memory_check", run.memory_check);
  f.real_or_auto("timeout", run.timeout, at_least(0.0), RunConfig::kAutoTimeout);
  f.real("timeout_floor", run.timeout_floor, above(0.0));
  f.text("peak_flops", run.peak_flops);
  f.choice("device", run.device, kRunDeviceSpellings);
}

template <class Fields, class Section>
void model_fields(Fields& f, Section& model) {
  f.choice("kind", model.kind, kModelFamilySpellings);
  f.integer("vocab_size", model.vocab_size, positive());
  f.integer("vocab_multiple", model.vocab_multiple, positive());
  f.integer("seq_len", model.seq_len, positive());
  f.integer("layers", model.layers, positive());
  f.integer("hidden", model.hidden, positive());
  f.integer("heads", model.heads, positive());
  f.integer("mlp_ratio", model.mlp_ratio, positive());
  f.real("dropout", model.dropout, unit_interval_open_top());
  f.real("init_std", model.init_std, above(0.0));
  f.flag("tie_embeddings", model.tie_embeddings);
  f.word("position", model.position, {"learned", "rotary"});
  f.real("rotary_pct", model.rotary_pct, RealRange{0.0, 1.0, true, false});
  f.real("rotary_base", model.rotary_base, above(1.0));
  f.integer("attention_block_size", model.attention_block_size, non_negative());
  f.choice("attention_backend", model.attention_backend, kAttentionBackendSpellings);
  f.flag("parallel_residual", model.parallel_residual);
  f.word("mlp_activation", model.mlp_activation, {"gelu", "gelu_tanh", "swiglu"});
  f.word("init", model.init, {"gpt2", "neox"});
  f.choice("norm", model.norm, kNormalizationSpellings);
  f.real("norm_eps", model.norm_eps, above(0.0));
  f.integer("kv_heads", model.kv_heads, non_negative());
  f.integer("intermediate_size", model.intermediate_size, non_negative());
  f.flag("bias", model.bias);
  f.real("rope_scaling_factor", model.rope_scaling_factor, at_least(0.0));
  f.real("rope_low_freq_factor", model.rope_low_freq_factor, above(0.0));
  f.real("rope_high_freq_factor", model.rope_high_freq_factor, above(0.0));
  f.integer("rope_original_max_positions", model.rope_original_max_positions, positive());
  f.text("init_from", model.init_from, /*may_be_empty=*/true);
  f.integer("depth", model.depth, positive());
  f.integer("width", model.width, positive());
  f.integer("image_size", model.image_size, IntRange{4, std::numeric_limits<int64_t>::max()});
  f.integer("channels", model.channels, positive());
  f.integer("classes", model.classes, IntRange{2, std::numeric_limits<int64_t>::max()});
  f.word("activation", model.activation, {"relu", "silu"});
}

template <class Fields, class Section>
void parallel_fields(Fields& f, Section& parallel) {
  const IntRange dimension{1, kMaxRanks};
  f.integer_or_auto("data", parallel.data, dimension, 0);
  f.integer("tensor", parallel.tensor, dimension);
  f.integer("pipeline", parallel.pipeline, dimension);
  f.integer("spatial", parallel.spatial, dimension);
  f.integer("context", parallel.context, dimension);
  f.integer("zero_stage", parallel.zero_stage, IntRange{0, 3});
  f.word("zero3_gather", parallel.zero3_gather, {"layer", "model"});
  f.word("zero_gradient_memory", parallel.zero_gradient_memory, {"full_buffer", "shard"});
  f.choice("schedule", parallel.schedule, kPipelineScheduleSpellings);
  f.pipeline_balance(parallel);
  f.size("dp_bucket_bytes", parallel.dp_bucket_bytes);
  f.word("spatial_slicing", parallel.spatial_slicing, {"square", "vertical", "horizontal"});
  f.integer("spatial_stages", parallel.spatial_stages, IntRange{0, kMaxRanks});
  f.flag("bidirectional", parallel.bidirectional);
  f.flag("sequence_parallel", parallel.sequence_parallel);
  f.word("tp_forward_sum", parallel.tp_forward_sum, {"float32", "compute"});
  f.word("dp_sync", parallel.dp_sync, {"every_step", "diloco"});
}

// parallel.diloco, a mapping of its own.
template <class Fields, class Section>
void diloco_fields(Fields& f, Section& diloco) {
  f.integer("sync_every", diloco.sync_every, positive());
  f.real("outer_lr", diloco.outer_lr, above(0.0));
  f.real("outer_momentum", diloco.outer_momentum, unit_interval_open_top());
  f.integer("fragments", diloco.fragments, positive());
  f.integer("warmup_steps", diloco.warmup_steps, non_negative());
}

template <class Fields, class Section>
void training_fields(Fields& f, Section& training) {
  f.integer("steps", training.steps, positive());
  f.integer("global_batch", training.global_batch, positive());
  f.integer("micro_batch", training.micro_batch, positive());
  f.real("lr", training.lr, above(0.0));
  f.real("min_lr", training.min_lr, at_least(0.0));
  f.integer("warmup_steps", training.warmup_steps, non_negative());
  f.real("weight_decay", training.weight_decay, at_least(0.0));
  f.real("beta1", training.beta1, unit_interval_open_top());
  f.real("beta2", training.beta2, unit_interval_open_top());
  f.real("eps", training.eps, above(0.0));
  f.real("grad_clip", training.grad_clip, at_least(0.0));
  f.integer("threads", training.threads, IntRange{1, 1024});
  f.flag("overlap_grad_reduce", training.overlap_grad_reduce);
  f.word("on_nonfinite", training.on_nonfinite, {"abort", "skip_step"});
  f.integer("max_skipped_steps", training.max_skipped_steps, positive());
  f.choice("precision", training.precision, kPrecisionSpellings);
  f.real("loss_scale_initial", training.loss_scale_initial, RealRange{1.0, 1e30});
  f.integer("loss_scale_growth_interval", training.loss_scale_growth_interval, positive());
  f.real("loss_scale_backoff", training.loss_scale_backoff, RealRange{0.0, 1.0, true, true});
  f.real("loss_scale_min", training.loss_scale_min, RealRange{1.0, 1e30});
  f.word("recompute", training.recompute, {"none", "selective", "full"});
  f.integer("recompute_layers", training.recompute_layers, non_negative());
}

template <class Fields, class Section>
void data_fields(Fields& f, Section& data) {
  f.choice("kind", data.kind, kDataKindSpellings);
  f.unsigned_integer("seed", data.seed);
  f.integer("branching", data.branching, positive());
  f.real("concentration", data.concentration, above(0.0));
  f.paths("paths", data.paths);
  f.ratios("weights", data.weights);
  f.ratios("split", data.split);
  f.text("cache_dir", data.cache_dir, /*may_be_empty=*/true);
  f.text("tokenizer", data.tokenizer, /*may_be_empty=*/true);
  f.real("noise", data.noise, at_least(0.0));
}

template <class Fields, class Section>
void eval_fields(Fields& f, Section& eval) {
  f.integer("every", eval.every, non_negative());
  f.integer("batches", eval.batches, positive());
}

template <class Fields, class Section>
void checkpoint_fields(Fields& f, Section& checkpoint) {
  f.text("dir", checkpoint.dir, /*may_be_empty=*/true);
  f.integer("every", checkpoint.every, non_negative());
  f.integer("keep_last", checkpoint.keep_last, non_negative());
  f.flag("async", checkpoint.async);
}

template <class Fields, class Section>
void log_fields(Fields& f, Section& log) {
  f.integer("every", log.every, positive());
  f.flag("metrics_jsonl", log.metrics_jsonl);
  f.flag("tensorboard", log.tensorboard);
}

// Runs a section's field list with a FieldWriter.
template <class Section>
void write_fields(YAML::Emitter& out, const Section& section,
                  void (*fields)(FieldWriter&, const Section&)) {
  FieldWriter writer(out);
  fields(writer, section);
}

}  // namespace

void read_run(MapReader r, RunConfig& run) {
  FieldReader f(r);
  run_fields(f, run);
  if (run.name.find('/') != std::string::npos || run.name == "." || run.name == "..")
    r.fail("name",
           "must be a plain directory name (the run directory is run.dir/run.name), got \"" +
               run.name + "\"");
  r.finish();
}

void read_model(MapReader r, ModelConfig& model) {
  FieldReader f(r);
  model_fields(f, model);
  if (model.kind == ModelFamily::kResnet && (model.depth < 11 || (model.depth - 2) % 9 != 0))
    r.fail("depth", "a ResNet's depth must be 9n + 2 with n >= 1 (11, 20, 29, ..., 110), got " +
                        std::to_string(model.depth));
  r.finish();
}

void read_parallel(MapReader r, ParallelConfig& parallel) {
  FieldReader f(r);
  parallel_fields(f, parallel);
  MapReader diloco = r.section("diloco");
  FieldReader diloco_reader(diloco);
  diloco_fields(diloco_reader, parallel.diloco);
  diloco.finish();
  r.finish();
}

void read_training(MapReader r, TrainingConfig& training) {
  FieldReader f(r);
  training_fields(f, training);
  if (training.loss_scale_min > training.loss_scale_initial)
    r.fail("loss_scale_min", "must not exceed training.loss_scale_initial (" +
                                 std::to_string(training.loss_scale_initial) + "), got " +
                                 std::to_string(training.loss_scale_min));
  r.finish();
}

void read_data(MapReader r, DataConfig& data) {
  FieldReader f(r);
  data_fields(f, data);
  if (data.kind == DataKind::kIndexed && data.paths.empty())
    r.fail("paths",
           "data.kind indexed needs a dataset prefix (PREFIX.bin + PREFIX.idx) or a list of them");
  if (data.kind != DataKind::kIndexed && !data.paths.empty())
    r.fail("paths", std::string("is read only with data.kind: indexed (data.kind is ") +
                        name_of(data.kind) + ")");
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

void read_eval(MapReader r, EvalConfig& eval) {
  FieldReader f(r);
  eval_fields(f, eval);
  r.finish();
}

void read_checkpoint(MapReader r, CheckpointConfig& checkpoint) {
  FieldReader f(r);
  checkpoint_fields(f, checkpoint);
  r.finish();
}

void read_log(MapReader r, LogConfig& log) {
  FieldReader f(r);
  log_fields(f, log);
  r.finish();
}

void write_run(YAML::Emitter& out, const RunConfig& run) {
  write_fields(out, run, run_fields<FieldWriter, const RunConfig>);
}
void write_model(YAML::Emitter& out, const ModelConfig& model) {
  write_fields(out, model, model_fields<FieldWriter, const ModelConfig>);
}
void write_parallel(YAML::Emitter& out, const ParallelConfig& parallel) {
  write_fields(out, parallel, parallel_fields<FieldWriter, const ParallelConfig>);
  out << YAML::Key << "diloco" << YAML::Value << YAML::BeginMap;
  write_fields(out, parallel.diloco, diloco_fields<FieldWriter, const DilocoConfig>);
  out << YAML::EndMap;
}
void write_training(YAML::Emitter& out, const TrainingConfig& training) {
  write_fields(out, training, training_fields<FieldWriter, const TrainingConfig>);
}
void write_data(YAML::Emitter& out, const DataConfig& data) {
  write_fields(out, data, data_fields<FieldWriter, const DataConfig>);
}
void write_eval(YAML::Emitter& out, const EvalConfig& eval) {
  write_fields(out, eval, eval_fields<FieldWriter, const EvalConfig>);
}
void write_checkpoint(YAML::Emitter& out, const CheckpointConfig& checkpoint) {
  write_fields(out, checkpoint, checkpoint_fields<FieldWriter, const CheckpointConfig>);
}
void write_log(YAML::Emitter& out, const LogConfig& log) {
  write_fields(out, log, log_fields<FieldWriter, const LogConfig>);
}

}  // namespace cmpi::config
