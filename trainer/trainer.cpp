#include "trainer/trainer.h"

#include <mpi.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>

#include "checkpoint/checkpoint_store.h"
#include "checkpoint/rank_agreement.h"
#include "io/atomic_file.h"
#include "io/directories.h"
#include "models/gpt.h"
#include "parallel/data_parallel_optimizer.h"
#include "parallel/param_info.h"
#include "parallel/pipeline_engine.h"
#include "parallel/pipeline_stages.h"
#include "parallel/pipeline_tied_embedding.h"
#include "parallel/process_groups.h"
#include "parallel/tensor_parallel_grad_norm.h"
#include "trainer/auto_report.h"
#include "trainer/checkpoint_hooks.h"
#include "trainer/cnn_trainer.h"
#include "trainer/lr_schedule.h"
#include "trainer/metrics.h"
#include "trainer/model_shape.h"
#include "trainer/nonfinite_guard.h"
#include "trainer/rank_state.h"
#include "trainer/step_report.h"
#include "trainer/tensor_dump.h"
#include "trainer/token_source.h"

namespace cmpi::trainer {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

struct Trainer::Impl {
  Impl(const Config& c, parallel::ProcessGroups& g, TrainerOptions o)
      : config(c),
        groups(g),
        options(std::move(o)),
        model(nullptr),
        source(options.source ? options.source
                              : open_token_source(c, g.world().mpi(), /*log=*/nullptr)) {}

  void setup();
  double train_step(int64_t step);
  // Tokens [micro_batch, seq + 1] of this rank's micro-batch m of global
  // batch `batch` (a fresh tensor: the pipeline's backward reads them after
  // later micro-batches are drawn).
  torch::Tensor sample_micro_batch(Split split, int64_t batch, int64_t m);
  // Mean loss over eval.batches global batches of the valid split, without
  // gradients or dropout; the same on every rank. With pp > 1 the batches go
  // forward through the pipeline; under ZeRO-3 the parameters are gathered.
  double evaluate();
  double pipeline_step(int64_t step, double scale, bool overlap);
  void sync_parameters();
  comm::OpCounters comm_totals() const;
  std::string groups_json() const;
  std::string memory_json() const;
  void dump_tensors(int64_t step);
  void dump_parameters();
  void restore_checkpoint();
  // Same layout: this rank's residuals and generators from its own shard.
  // Another layout: they cannot be mapped; says what is dropped.
  void restore_rank_state(const checkpoint::LoadedCheckpoint& loaded, bool print);
  std::map<std::string, int64_t> layout() const;
  std::string save_checkpoint();
  // metrics.jsonl of the steps before a resumed checkpoint's, to keep.
  std::string earlier_metrics(const std::string& path) const;

  const Config& config;
  parallel::ProcessGroups& groups;
  TrainerOptions options;
  models::Gpt model;
  std::shared_ptr<const TokenSource> source;
  std::unique_ptr<parallel::DataParallelOptimizer> optimizer;  // dp sync, clipping, AdamW, ZeRO
  std::vector<torch::Tensor> parameters;
  std::vector<parallel::ParamInfo> param_infos;
  std::unique_ptr<parallel::PipelineEngine> pipeline;  // pp > 1 only
  std::unique_ptr<parallel::PipelineTiedEmbedding> tied_embedding;
  LrSchedule schedule;
  int64_t micro_batches = 1;  // per rank per step
  double last_grad_norm = 0;
  double last_local_loss = 0;  // this rank's own micro-batches, before the dp average
  // What the guard needs of the last step on this rank.
  RankHealth health() const;
  std::unique_ptr<NonfiniteGuard> guard;
  std::vector<CheckpointedParam> checkpointed;  // this rank's parameters, global layout
  int64_t steps_done = 0;                       // where run() starts, then how far it got
  int64_t skipped_before = 0;                   // skipped steps before a resumed checkpoint
};

Trainer::Trainer(const Config& config, parallel::ProcessGroups& groups, TrainerOptions options) {
  if (config.model.kind == "resnet") {
    if (!options.dump_tensors_dir.empty() || !options.resume_path.empty())
      throw std::invalid_argument(
          "model.kind resnet: --dump-tensors and --resume are not supported (no checkpoints)");
    cnn_ = std::make_unique<CnnTrainer>(config, groups, std::move(options));
    return;
  }
  impl_ = std::make_unique<Impl>(config, groups, std::move(options));
  impl_->setup();
}

Trainer::~Trainer() = default;

void Trainer::Impl::setup() {
  const auto& t = config.training;
  const int dp = groups.dims().dp;
  if (t.global_batch % (t.micro_batch * dp) != 0)
    throw std::invalid_argument("training.global_batch (" + std::to_string(t.global_batch) +
                                ") is not a multiple of training.micro_batch (" +
                                std::to_string(t.micro_batch) + ") x dp (" + std::to_string(dp) +
                                ")");
  micro_batches = t.global_batch / (t.micro_batch * dp);
  at::set_num_threads(int(t.threads));
  torch::manual_seed(config.run.seed);
  auto model_options = gpt_options(config.model);
  model_options.seed = config.run.seed;
  // Per-layer ZeRO-3 generates each rank's shards in the optimizer: the model
  // holds stand-ins, and no rank builds a whole parameter tensor.
  const bool layered_zero3 =
      config.parallel.zero_stage == 3 && config.parallel.zero3_gather == "layer";
  model_options.materialize_parameters = !layered_zero3;
  const auto stage = parallel::stage_of(config.model.layers, groups.dims().pp, groups.coord().pp,
                                        config.parallel.stage_layers);
  model = models::Gpt(
      model_options, groups,
      models::StagePlan{stage.first_layer, stage.end_layer, stage.has_embedding, stage.has_head});
  const bool tied = config.model.tie_embeddings;
  if (groups.dims().pp > 1) {
    if (!options.dump_tensors_dir.empty())
      throw std::invalid_argument("dumping tensors needs the whole model on one rank (pp = 1), " +
                                  groups.dims().to_string());
    pipeline = std::make_unique<parallel::PipelineEngine>(
        groups.pp(), parallel::make_pipeline_schedule(config.parallel.schedule),
        std::vector<int64_t>{t.micro_batch, config.model.seq_len, config.model.hidden});
    if (tied)
      tied_embedding =
          std::make_unique<parallel::PipelineTiedEmbedding>(groups.pp(), groups.policy());
  }
  param_infos = model->param_infos();
  for (const auto& layout : model->layouts()) {
    checkpoint::SliceSpec slice{layout.tensor.sizes().vec(), int32_t(layout.split_dim), 0, 1};
    if (layout.split_dim >= 0) {
      slice.global_shape[size_t(layout.split_dim)] *= groups.tp().size();
      slice.index = groups.tp().rank();
      slice.count = groups.tp().size();
    }
    checkpointed.push_back({layout.name, slice});
  }
  for (const auto& info : param_infos) parameters.push_back(info.tensor);
  if (!layered_zero3) sync_parameters();  // generated shards agree by construction

  // Weight decay on matrices only (ParamInfo::weight_decay); the head's copy of
  // the tied table on a stage without the embedding is counted in the global
  // gradient norm by the first stage.
  parallel::DataParallelOptimizerOptions optimizer_options;
  optimizer_options.adamw = {t.lr, t.beta1, t.beta2, t.eps, t.weight_decay};
  optimizer_options.zero_stage = int(config.parallel.zero_stage);
  optimizer_options.bucket_bytes = config.parallel.dp_bucket_bytes;
  if (tied && model->stage().has_head && !model->stage().has_embedding)
    optimizer_options.counted_elsewhere.insert("token_embedding.weight");
  // Untied, the token embedding's gradient holds only the rows of the step's
  // tokens: its own buckets, role embedding_gradient, so the policy may send
  // it block-sparse (compression.sparse_embedding).
  if (!tied && model->stage().has_embedding)
    optimizer_options.sparse_gradients.insert("token_embedding.weight");
  // The tied table's gradient is summed over the pipeline's end stages after
  // backward (pipeline_step), so its bucket is reduced over dp only in step().
  optimizer_options.overlap_grad_reduce = t.overlap_grad_reduce;
  if (tied_embedding)
    for (const auto& info : param_infos)
      if (info.name == "token_embedding.weight") optimizer_options.late_gradients.insert(info.name);
  if (layered_zero3) {
    optimizer_options.layer_schedule = model->layer_schedule();
    auto* gpt = model.get();
    optimizer_options.initial_values = [gpt](size_t param, size_t offset, size_t length,
                                             float* out) {
      gpt->fill_initial_values(param, offset, length, out);
    };
  }
  optimizer = parallel::make_data_parallel_optimizer(param_infos, optimizer_options, groups);
  model->set_layer_gate(optimizer->layer_gate());
  schedule.peak = t.lr;
  schedule.min_lr = t.min_lr;
  schedule.warmup_steps = t.warmup_steps;
  schedule.total_steps = t.steps;
  guard = std::make_unique<NonfiniteGuard>(t, groups);
  if (!options.resume_path.empty()) restore_checkpoint();
}

// Every rank reads what its parameters need; all agree before any step runs.
void Trainer::Impl::restore_checkpoint() {
  const auto start = Clock::now();
  uint64_t shard_bytes = 0;
  const int64_t print_every = options.print_every >= 0 ? options.print_every : config.log.every;
  checkpoint::agree_or_throw(groups.world().mpi(), [&] {
    const std::string& path = options.resume_path;
    std::set<std::string> wanted;
    for (const auto& p : checkpointed) wanted.insert(p.name);
    const auto loaded = checkpoint::LoadedCheckpoint::read(path, &wanted);
    restore_optimizer(loaded, config.model, checkpointed, *optimizer);
    restore_rank_state(loaded, print_every > 0);
    steps_done = loaded.metadata().step;
    skipped_before = loaded.metadata().skipped_steps;
    for (const auto& shard : loaded.metadata().shards) shard_bytes += shard.bytes;
  });
  if (groups.world_rank() == 0 && print_every > 0) {
    std::printf("checkpoint: resumed at step %lld from %s (%.2f MB of shards, loaded in %.3f s)\n",
                (long long)steps_done, options.resume_path.c_str(), double(shard_bytes) / 1e6,
                seconds_since(start));
    std::fflush(stdout);
  }
}

std::map<std::string, int64_t> Trainer::Impl::layout() const {
  const auto& dims = groups.dims();
  return {{"dp", dims.dp},
          {"tp", dims.tp},
          {"pp", dims.pp},
          {"zero_stage", config.parallel.zero_stage},
          {"world", groups.world().size()}};
}

// Residual buffer keys and sizes, and which generator draws for which
// dropout, belong to one rank of one layout: a resume under another layout
// starts them afresh (and says so) rather than refusing, since the weights
// and optimizer state, the bulk of the run, do carry over.
void Trainer::Impl::restore_rank_state(const checkpoint::LoadedCheckpoint& loaded, bool print) {
  const bool is_root = groups.world_rank() == 0;
  const auto& saved = loaded.metadata();
  if (saved.layout == layout()) {
    const auto report = trainer::restore_rank_state(loaded.rank_state(groups.world_rank()), groups,
                                                    *model, *optimizer);
    if (report.powersgd_restarted && print && is_root) {
      std::fprintf(stderr,
                   "warning: checkpoint %s holds no PowerSGD state (saved by a run without a "
                   "powersgd rule): PowerSGD restarts its Q's and residuals, so the run does not "
                   "continue as an uninterrupted one would\n",
                   loaded.dir().c_str());
      std::fflush(stderr);
    }
    if (!report.dropped.empty() && print && is_root) {
      std::string names;
      for (size_t i = 0; i < report.dropped.size() && i < 4; ++i)
        names += (i ? ", " : "") + report.dropped[i];
      std::fprintf(stderr,
                   "warning: rank %d: %zu saved codec or generator states have no place in this "
                   "run's compression policy or model and are dropped (%s%s)\n",
                   groups.world_rank(), report.dropped.size(), names.c_str(),
                   report.dropped.size() > 4 ? ", ..." : "");
      std::fflush(stderr);
    }
    return;
  }
  // Dropout must not replay the masks of step 0: the default generator
  // restarts from the run seed mixed with the step (the same on every rank,
  // as at the start, so tensor-parallel ranks keep drawing the same masks).
  torch::manual_seed(config.run.seed ^ (0x9e3779b97f4a7c15ULL * uint64_t(saved.step + 1)));
  if (!is_root || !print) return;
  auto layout_text = [](const std::map<std::string, int64_t>& l) {
    std::string out;
    for (const auto& [key, value] : l)
      out += (out.empty() ? "" : " ") + key + "=" + std::to_string(value);
    return out;
  };
  if (saved.residual_buffers > 0)
    std::fprintf(stderr,
                 "warning: checkpoint %s was saved under another layout (%s; this run: %s): its "
                 "%lld error-feedback residual buffers belong to the old ranks' buffers and are "
                 "dropped; error feedback restarts from zero residuals\n",
                 loaded.dir().c_str(), layout_text(saved.layout).c_str(),
                 layout_text(layout()).c_str(), (long long)saved.residual_buffers);
  if (optimizer->powersgd_reducer() != nullptr)
    std::fprintf(stderr,
                 "warning: checkpoint %s was saved under another layout: PowerSGD's Q's and "
                 "residuals belong to the old ranks' buckets; they restart\n",
                 loaded.dir().c_str());
  if (config.model.dropout > 0)
    std::fprintf(stderr,
                 "warning: checkpoint %s was saved under another layout: dropout generators "
                 "restart from the run seed mixed with the step, so the masks differ from those "
                 "an uninterrupted run would draw\n",
                 loaded.dir().c_str());
  std::fflush(stderr);
}

std::string Trainer::Impl::save_checkpoint() {
  checkpoint::CheckpointMetadata metadata;
  const auto state = optimizer->state();
  metadata.step = steps_done;
  metadata.optimizer_steps = state.steps;
  metadata.skipped_steps = skipped_before + guard->skipped_steps();
  metadata.layout = layout();
  metadata.model = model_shape(config.model);
  const auto rank_state = collect_rank_state(groups, *model, *optimizer);
  int64_t residuals = int64_t(residual_names(rank_state).size());
  MPI_Allreduce(MPI_IN_PLACE, &residuals, 1, MPI_INT64_T, MPI_SUM, groups.world().mpi());
  metadata.residual_buffers = residuals;
  std::set<std::string> held_elsewhere;
  if (config.model.tie_embeddings && !model->stage().has_embedding)
    held_elsewhere.insert("token_embedding.weight");
  const auto entries = shard_entries(checkpointed, state, groups.coord().dp == 0, held_elsewhere);
  const auto saved = checkpoint::save_checkpoint(
      checkpoint_root(config), metadata, entries, options.resolved_config,
      config.checkpoint.keep_last, groups.world().mpi(), rank_state);
  const int64_t print_every = options.print_every >= 0 ? options.print_every : config.log.every;
  if (groups.world_rank() == 0 && print_every > 0) {
    std::printf("checkpoint: step %lld saved to %s (%.2f MB in %.3f s)\n", (long long)steps_done,
                saved.path.c_str(), double(saved.bytes) / 1e6, saved.seconds);
    std::fflush(stdout);
  }
  return saved.path;
}

// The final weights, for checking exports: only where world rank 0 holds the
// whole model materialised (tp = 1, pp = 1, ZeRO stage below 3).
void Trainer::Impl::dump_parameters() {
  if (groups.world_rank() != 0 || groups.dims().tp > 1 || config.parallel.zero_stage == 3) return;
  std::string index;
  std::vector<torch::Tensor> flat;
  for (const auto& info : param_infos) {
    index += info.name;
    for (int64_t d : info.tensor.sizes()) index += " " + std::to_string(d);
    index += "\n";
    flat.push_back(info.tensor.detach().reshape({-1}));
  }
  write_f32(options.dump_tensors_dir + "/parameters.f32", torch::cat(flat));
  io::write_file_atomically(options.dump_tensors_dir + "/parameters.txt", index);
}

std::string Trainer::Impl::earlier_metrics(const std::string& path) const {
  std::ifstream in(path);
  std::string kept, line;
  while (std::getline(in, line)) {
    const size_t at = line.find("{\"step\":");
    if (at != 0 || std::stoll(line.substr(8)) > steps_done) break;
    kept += line + "\n";
  }
  return kept;
}

RankHealth Trainer::Impl::health() const {
  RankHealth h;
  h.world_rank = groups.world_rank();
  h.coord = groups.coord();
  // Only the last pipeline stage computes the loss; the others received it.
  h.computed_loss = !pipeline || pipeline->is_last();
  h.loss = last_local_loss;
  h.update_skipped = optimizer->last_step_skipped();
  h.own_param = optimizer->last_nonfinite_gradients().own_param;
  h.reduced_param = optimizer->last_nonfinite_gradients().reduced_param;
  return h;
}

// Every DP replica starts from DP rank 0's weights, whatever each rank's RNG did.
void Trainer::Impl::sync_parameters() {
  if (groups.dims().dp == 1) return;
  torch::NoGradGuard no_grad;
  for (auto& p : parameters) {
    auto contiguous = p.contiguous();
    groups.dp().broadcast(contiguous.data_ptr<float>(), size_t(p.numel()), 0, comm::Role::kWeight);
    p.copy_(contiguous);
  }
}

comm::OpCounters Trainer::Impl::comm_totals() const {
  return trainer::comm_totals(groups);
}

std::string Trainer::Impl::groups_json() const {
  return trainer::groups_json(groups);
}

std::string Trainer::Impl::memory_json() const {
  return optimizer_memory_json(*optimizer, "gathered_parameters_peak_bytes",
                               optimizer->peak_gathered_parameter_bytes());
}

double Trainer::Impl::train_step(int64_t step) {
  const auto& t = config.training;
  const int64_t seq = config.model.seq_len;
  const int dp = groups.dims().dp;
  const double scale = 1.0 / double(micro_batches * dp);

  // Dumped gradients are this rank's own (before the dp reduction and
  // clipping), so that step reduces nothing during backward.
  const bool dump = step + 1 == t.steps && !options.dump_tensors_dir.empty();
  optimizer->zero_grad();
  optimizer->before_forward();
  model->train();
  double local_loss = 0;
  if (pipeline) {
    local_loss = pipeline_step(step, scale, /*overlap=*/!dump);
  } else {
    for (int64_t m = 0; m < micro_batches; ++m) {
      auto batch = sample_micro_batch(Split::kTrain, step, m);
      auto loss = model->loss(batch.narrow(1, 0, seq), batch.narrow(1, 1, seq));
      // Buckets start reducing as this backward finishes their gradients.
      if (m + 1 == micro_batches && !dump) optimizer->begin_last_micro_batch();
      (loss * scale).backward();
      local_loss += loss.item<double>() * scale;
    }
  }

  if (dump) dump_tensors(step);
  last_local_loss = local_loss;
  // Reduces over dp, clips by the global norm over dp/tp/pp, AdamW (ZeRO
  // stage); a non-finite norm leaves everything as it was.
  last_grad_norm = optimizer->step(schedule.at(step), t.grad_clip);

  // After step(): until then the optimizer's comm thread may be using dp.
  float loss_value = float(local_loss);
  if (dp > 1) groups.dp().allreduce(&loss_value, 1, comm::Role::kOther);
  return double(loss_value);
}

torch::Tensor Trainer::Impl::sample_micro_batch(Split split, int64_t step, int64_t m) {
  const int64_t seq = config.model.seq_len, micro_batch = config.training.micro_batch;
  auto batch = torch::empty({micro_batch, seq + 1}, torch::kLong);
  int64_t* tokens = batch.data_ptr<int64_t>();
  // This rank's sequences are a contiguous slice of the step's global batch.
  const int64_t first = (int64_t(groups.coord().dp) * micro_batches + m) * micro_batch;
  for (int64_t b = 0; b < micro_batch; ++b)
    source->sample(split, step, first + b, tokens + b * (seq + 1), seq + 1);
  return batch;
}

double Trainer::Impl::evaluate() {
  const int64_t seq = config.model.seq_len, batches = config.eval.batches;
  const int dp = groups.dims().dp;
  torch::NoGradGuard no_grad;
  // ZeRO-3 holds only shards between steps: gather the parameters as the
  // training forward does (the next step finds them in place and reuses them).
  if (optimizer->zero_stage() == 3) optimizer->before_forward();
  model->eval();
  double local_loss = 0;
  for (int64_t b = 0; b < batches; ++b) {
    if (pipeline) {
      // Forward through the stages; every stage gets the last stage's sum.
      parallel::PipelineStageWork work;
      work.embed = [&](int64_t m) {
        return model->embed(sample_micro_batch(Split::kValid, b, m).narrow(1, 0, seq));
      };
      work.run_blocks = [&](const torch::Tensor& hidden) { return model->run_blocks(hidden); };
      work.loss = [&](const torch::Tensor& hidden, int64_t m) {
        return model->head_loss(hidden, sample_micro_batch(Split::kValid, b, m).narrow(1, 1, seq));
      };
      local_loss += pipeline->run_forward(work, micro_batches, 1.0);
      continue;
    }
    for (int64_t m = 0; m < micro_batches; ++m) {
      auto batch = sample_micro_batch(Split::kValid, b, m);
      local_loss += model->loss(batch.narrow(1, 0, seq), batch.narrow(1, 1, seq)).item<double>();
    }
  }
  model->train();
  float loss = float(local_loss / double(batches * micro_batches * dp));
  if (dp > 1) groups.dp().allreduce(&loss, 1, comm::Role::kOther);
  return double(loss);
}

// The pipeline runs this stage's share of every micro-batch; the first and
// last stage draw the same tokens (inputs and targets) from the source.
double Trainer::Impl::pipeline_step(int64_t step, double scale, bool overlap) {
  const int64_t seq = config.model.seq_len;
  parallel::PipelineStageWork work;
  if (overlap) work.before_last_backward = [&] { optimizer->begin_last_micro_batch(); };
  work.embed = [&](int64_t m) {
    return model->embed(sample_micro_batch(Split::kTrain, step, m).narrow(1, 0, seq));
  };
  work.run_blocks = [&](const torch::Tensor& hidden) { return model->run_blocks(hidden); };
  work.loss = [&](const torch::Tensor& hidden, int64_t m) {
    return model->head_loss(hidden, sample_micro_batch(Split::kTrain, step, m).narrow(1, 1, seq));
  };
  const double loss = pipeline->run_step(work, micro_batches, scale);
  if (tied_embedding) tied_embedding->sync_gradients(model->tied_embedding_weight());
  return loss;
}

void Trainer::Impl::dump_tensors(int64_t step) {
  // The forward below is collective over tp: world rank 0's tp group runs it.
  const auto& coord = groups.coord();
  if (coord.dp != 0 || coord.pp != 0 || coord.sp != 0) return;
  std::vector<torch::Tensor> grads;
  for (const auto& p : parameters)
    if (p.grad().defined()) grads.push_back(p.grad().reshape({-1}));
  std::vector<torch::Tensor> activations;
  {
    torch::NoGradGuard no_grad;
    const int64_t seq = config.model.seq_len;
    std::vector<int64_t> tokens(size_t(config.training.micro_batch * seq));
    for (int64_t b = 0; b < config.training.micro_batch; ++b)
      source->sample(Split::kTrain, step, b, &tokens[size_t(b * seq)], seq);
    auto batch = torch::from_blob(tokens.data(), {config.training.micro_batch, seq}, torch::kLong);
    model->forward(batch, &activations);
  }
  if (groups.world_rank() != 0) return;
  for (auto& a : activations) a = a.reshape({-1});
  write_f32(options.dump_tensors_dir + "/gradients.f32", torch::cat(grads));
  write_f32(options.dump_tensors_dir + "/activations.f32", torch::cat(activations));
}

TrainResult Trainer::run() {
  if (cnn_) return cnn_->run();
  Impl& s = *impl_;
  const auto& t = s.config.training;
  const bool is_root = s.groups.world_rank() == 0;
  const int64_t print_every =
      s.options.print_every >= 0 ? s.options.print_every : s.config.log.every;

  std::string metrics_path;
  if (is_root && !s.options.run_dir.empty()) {
    io::create_directories(s.options.run_dir);
    if (!s.options.resolved_config.empty())
      io::write_file_atomically(s.options.run_dir + "/config.yaml", s.options.resolved_config);
    if (s.config.log.metrics_jsonl) metrics_path = s.options.run_dir + "/metrics.jsonl";
  }
  // A resumed run continues the metrics of the steps before its checkpoint.
  const std::string earlier =
      metrics_path.empty() || s.steps_done == 0 ? "" : s.earlier_metrics(metrics_path);
  if (!s.options.dump_tensors_dir.empty() && is_root)
    io::create_directories(s.options.dump_tensors_dir);
  MetricsLog log(metrics_path, is_root ? print_every : 0, earlier);

  TrainResult result;
  result.loss_floor = s.source->loss_floor();
  result.parameters = gpt_options(s.config.model).parameter_count();
  int64_t local_parameters = 0;
  for (const auto& p : s.parameters) local_parameters += p.numel();
  if (is_root && print_every > 0) {
    std::printf(
        "model: %lld parameters (%lld on rank 0) | layout %s | %lld micro-batches of %lld per "
        "rank | data: %s\n",
        (long long)result.parameters, (long long)local_parameters,
        s.groups.dims().to_string().c_str(), (long long)s.micro_batches, (long long)t.micro_batch,
        result.loss_floor > 0
            ? ("entropy floor " + std::to_string(result.loss_floor) + " nats/token").c_str()
            : s.config.data.kind.c_str());
    std::fflush(stdout);
  }

  const auto run_start = Clock::now();
  const int64_t first_step = s.steps_done;
  const bool adaptive = s.groups.policy().config().preset == "auto";
  for (int64_t step = first_step; step < t.steps; ++step) {
    const auto before = s.comm_totals();
    const double cpu_start = process_cpu_seconds();
    const auto step_start = Clock::now();
    // Preset auto: every group settles its routes for this step (part of
    // the step's time, so that auto's own cost shows in tokens_per_s).
    std::vector<comm::AutoDecision> decisions;
    if (adaptive) {
      decisions = s.groups.adapt(step);
      if (s.tied_embedding)
        for (auto& d : s.tied_embedding->adapt(step)) decisions.push_back(std::move(d));
    }
    const double adapt_ms = seconds_since(step_start) * 1e3;
    if (is_root && print_every > 0)
      for (const auto& d : decisions)
        if (d.changed) std::printf("%s\n", auto_change_line(step + 1, d).c_str());
    if (is_root && !decisions.empty()) std::fflush(stdout);
    const double loss = s.train_step(step);
    const double step_seconds = seconds_since(step_start);
    const double cpu_end = process_cpu_seconds();
    const auto after = s.comm_totals();
    result.losses.push_back(loss);
    const StepVerdict verdict = s.guard->check(step + 1, s.last_grad_norm, s.health());
    result.skipped_steps = s.skipped_before + s.guard->skipped_steps();

    StepRecord r;
    r.step = step + 1;
    r.total_steps = t.steps;
    r.loss = loss;
    r.loss_floor = result.loss_floor;
    r.lr = s.schedule.at(step);
    r.grad_norm = s.last_grad_norm;
    r.skipped = verdict.skipped;
    r.skipped_steps = result.skipped_steps;
    r.step_ms = step_seconds * 1e3;
    if (cpu_start >= 0 && cpu_end >= 0) r.cpu_ms = (cpu_end - cpu_start) * 1e3;
    r.tokens_per_second = double(t.global_batch * s.config.model.seq_len) / step_seconds;
    record_step_traffic(r, before, after, *s.optimizer);
    const int64_t every = s.config.eval.every;
    if (every > 0 && ((step + 1) % every == 0 || step + 1 == t.steps) && !verdict.stop) {
      r.has_val_loss = true;
      r.val_loss = s.evaluate();
      result.val_losses.emplace_back(step + 1, r.val_loss);
    }
    if (is_root && (!metrics_path.empty() || print_every > 0)) {
      r.groups_json = s.groups_json();
      r.memory_json = s.memory_json();
      if (adaptive) r.auto_json = auto_decisions_json(decisions, adapt_ms);
      log.record(r);
    }
    if (verdict.stop) throw TrainingStopped(verdict.message, is_root);
    if (verdict.nonfinite && is_root) {
      std::fprintf(stderr, "warning: %s\n", verdict.message.c_str());
      std::fflush(stderr);
    }
    s.steps_done = step + 1;
    if (s.config.checkpoint.every > 0 && s.steps_done % s.config.checkpoint.every == 0)
      s.save_checkpoint();
  }
  result.seconds = seconds_since(run_start);
  result.peak_gathered_parameter_bytes = s.optimizer->peak_gathered_parameter_bytes();
  result.peak_state_bytes = s.optimizer->peak_bytes();
  log.close();
  if (!s.options.dump_tensors_dir.empty()) s.dump_parameters();
  if (is_root && !s.options.run_dir.empty()) {
    if (!s.options.resolved_config.empty()) result.run_files.push_back("config.yaml");
    if (!metrics_path.empty()) result.run_files.push_back("metrics.jsonl");
  }
  const auto totals = s.comm_totals();
  result.wire_bytes = totals.wire_bytes;
  result.raw_bytes = totals.raw_bytes;
  result.tokens_per_second =
      double(t.global_batch * s.config.model.seq_len * (t.steps - first_step)) / result.seconds;
  return result;
}

std::string Trainer::save_checkpoint() {
  if (cnn_) throw std::invalid_argument("model.kind resnet: checkpoints are not supported");
  return impl_->save_checkpoint();
}

}  // namespace cmpi::trainer
