#include "models/gpt_train_model.h"

#include <cmath>
#include <cstdio>
#include <utility>

#include "io/atomic_file.h"
#include "models/family/gpt_family.h"
#include "models/generator_state.h"
#include "models/tensor_dump.h"
#include "parallel/diloco/diloco_sync.h"
#include "parallel/diloco/replica_state.h"
#include "parallel/mesh/process_groups.h"
#include "parallel/pipeline/pipeline_engine.h"
#include "parallel/pipeline/pipeline_tied_embedding.h"
#include "parallel/zero/data_parallel_optimizer.h"

namespace cmpi::models {

GptTrainModel::GptTrainModel(const config::Config& config, parallel::ProcessGroups& groups,
                             GptParts parts)
    : config_(config), groups_(groups), parts_(std::move(parts)) {
  const auto& t = config.training;
  if (t.precision == config::Precision::kFp16)
    loss_scaler_ = std::make_unique<LossScaler>(
        LossScalerSettings{t.loss_scale_initial, t.loss_scale_growth_interval, t.loss_scale_backoff,
                           t.loss_scale_min});
}

GptTrainModel::~GptTrainModel() = default;

int64_t GptTrainModel::parameter_count() const {
  return gpt_options(config_.model).parameter_count();
}

int64_t GptTrainModel::local_parameter_count() const {
  int64_t local = 0;
  for (const auto& info : parts_.model->param_infos()) local += info.tensor.numel();
  return local;
}

std::string GptTrainModel::describe() const {
  const double floor = loss_floor();
  const std::string data = floor > 0 ? "entropy floor " + std::to_string(floor) + " nats/token"
                                     : std::string(config::name_of(config_.data.kind));
  char line[512];
  std::snprintf(line, sizeof line,
                "model: %lld parameters (%lld on rank 0) | layout %s | %lld micro-batches of %lld "
                "per rank | data: %s",
                (long long)parameter_count(), (long long)local_parameter_count(),
                groups_.dims().to_string().c_str(), (long long)parts_.micro_batches,
                (long long)config_.training.micro_batch, data.c_str());
  std::string out = line;
  if (parts_.diloco) {
    const auto& d = config_.parallel.diloco;
    std::snprintf(line, sizeof line,
                  "\ndp_sync: diloco: %d replicas step alone; every %lld steps an outer SGD step "
                  "(lr %g, Nesterov momentum %g) on the averaged pseudo-gradient, %lld "
                  "fragment(s) %lld steps apart; outer state %.2f MB on rank 0",
                  groups_.dp().size(), (long long)d.sync_every, d.outer_lr, d.outer_momentum,
                  (long long)d.fragments, (long long)(d.sync_every / d.fragments),
                  double(parts_.diloco->state_bytes()) / 1e6);
    out += line;
    if (d.warmup_steps > 0)
      out += "; the first " + std::to_string(d.warmup_steps) +
             " steps reduce gradients over dp every step (warm-up)";
  }
  const auto& t = config_.training;
  if (t.precision == config::Precision::kBf16)
    out +=
        "\nprecision: bf16 activations, float32 products (16-bit inputs, float32 "
        "accumulation); float32 master weights, AdamW state and gradient reduction";
  if (t.precision == config::Precision::kFp16)
    out +=
        "\nprecision: fp16 EMULATED on the CPU (LibTorch has no half matmul here): half "
        "activations and weight roundings, float32 arithmetic; float32 master weights, AdamW "
        "state and gradient reduction; dynamic loss scale from " +
        std::to_string(int64_t(t.loss_scale_initial));
  return out;
}

std::vector<comm::AutoDecision> GptTrainModel::adapt(int64_t step, double previous_loss) {
  auto decisions = groups_.adapt(step, previous_loss);
  if (parts_.tied_embedding)
    for (auto& d : parts_.tied_embedding->adapt(step, previous_loss))
      decisions.push_back(std::move(d));
  return decisions;
}

Outcome GptTrainModel::train_step(int64_t step, double lr, double clip,
                                  const std::string& dump_dir) {
  const int64_t seq = config_.model.seq_len;
  // The dp group spans cp: each of its ranks averaged the loss over its own
  // part of the sequences, so the mean over the group is the global mean.
  const int replicas = groups_.dp().size();
  // DiLoCo: each replica's gradient is the mean over its own micro-batches
  // (nothing sums them over dp); its loss is averaged over dp below. Its
  // warm-up steps are every-step ones (the optimizer reduces over dp).
  auto& optimizer = *parts_.optimizer;
  const bool replicas_apart = parts_.diloco && !parts_.diloco->in_warmup(step);
  if (replicas_apart && parts_.diloco->warmup_steps() > 0) optimizer.stop_reducing_over_dp();
  const int summed_replicas = replicas_apart ? 1 : replicas;
  const int64_t micro_batches = parts_.micro_batches;
  const double scale = 1.0 / double(micro_batches * summed_replicas);
  if (parts_.diloco) parts_.diloco->before_inner_step(step);

  // Dumped gradients are this rank's own (before the dp reduction and
  // clipping), so that step reduces nothing during backward.
  const bool dump = !dump_dir.empty();
  // fp16: backward from loss · loss_scale; the optimizer unscales.
  const double loss_scale = loss_scaler_ ? loss_scaler_->scale() : 1.0;
  optimizer.set_gradient_scale(loss_scale);
  optimizer.zero_grad();
  optimizer.before_forward();
  parts_.model->train();
  double local_loss = 0;
  if (parts_.pipeline) {
    local_loss = pipeline_step(step, scale, loss_scale, /*overlap=*/!dump);
  } else {
    for (int64_t m = 0; m < micro_batches; ++m) {
      auto batch = sample_micro_batch(data::Split::kTrain, step, m);
      auto loss = parts_.model->loss(batch.narrow(1, 0, seq), batch.narrow(1, 1, seq));
      // Buckets start reducing as this backward finishes their gradients.
      if (m + 1 == micro_batches && !dump) optimizer.begin_last_micro_batch();
      if (loss_scale != 1.0)
        (loss * scale * loss_scale).backward();
      else
        (loss * scale).backward();
      local_loss += loss.item<double>() * scale;
    }
  }

  if (dump) dump_tensors(step, dump_dir);
  last_local_loss_ = local_loss;
  // Reduces over dp, clips by the global norm over dp/tp/pp, AdamW (ZeRO
  // stage); a non-finite norm leaves everything as it was.
  last_grad_norm_ = optimizer.step(lr, clip);

  // After step(): until then the optimizer's comm thread may be using dp.
  float loss_value = float(local_loss);
  if (replicas > 1) groups_.dp().allreduce(&loss_value, 1, comm::Role::kOther);
  if (replicas_apart) loss_value /= float(replicas);
  // Every rank sees the same skip (a global norm) and the same loss, so the
  // scalers stay equal. An overflow with a finite loss is what the scale
  // absorbs; a non-finite loss (the forward overflowed) is not.
  last_loss_scale_ = loss_scaler_ ? loss_scale : 0.0;
  last_overflow_absorbed_ = false;
  if (loss_scaler_) {
    bool overflowed = optimizer.last_step_skipped();
    if (parts_.diloco && replicas > 1) {
      // Each replica skips on its own norm; the scale must stay one for all.
      int32_t any = overflowed ? 1 : 0;
      groups_.dp().control_allreduce(&any, 1, comm::ControlReduce::kMax);
      overflowed = any != 0;
    }
    last_overflow_absorbed_ =
        overflowed && std::isfinite(loss_value) && loss_scaler_->can_back_off();
    loss_scaler_->update(overflowed);
  }
  // DiLoCo: the outer step on the fragments due after this inner step.
  if (parts_.diloco) {
    last_outer_sync_.fragments = parts_.diloco->after_inner_step(step + 1);
    last_outer_sync_.seconds = parts_.diloco->last_sync_seconds();
  }
  // On a GPU the update's kernels may still run: the step ends when they do,
  // so that its time (metrics.jsonl's step_ms) is the whole step's.
  if (parts_.device.is_cuda()) torch::cuda::synchronize(parts_.device.index());
  return Outcome{double(loss_value), -1};
}

torch::Tensor GptTrainModel::sample_micro_batch(data::Split split, int64_t step, int64_t m) const {
  const int64_t seq = config_.model.seq_len, micro_batch = config_.training.micro_batch;
  auto batch = torch::empty({micro_batch, seq + 1}, torch::kLong);
  int64_t* tokens = batch.data_ptr<int64_t>();
  // This rank's sequences are a contiguous slice of the step's global batch.
  const int64_t first = (int64_t(groups_.coord().dp) * parts_.micro_batches + m) * micro_batch;
  for (int64_t b = 0; b < micro_batch; ++b)
    parts_.source->sample(split, step, first + b, tokens + b * (seq + 1), seq + 1);
  return batch.to(parts_.device);
}

// What this stage does with micro-batch m of `batch`: the first stage embeds
// its inputs, the last computes the loss on its targets (both draw the same
// tokens from the source).
parallel::PipelineStageWork GptTrainModel::stage_work(data::Split split, int64_t batch) {
  const int64_t seq = config_.model.seq_len;
  auto& model = parts_.model;
  parallel::PipelineStageWork work;
  // Stage outputs are widened to float32 from the compute dtype (exact; a
  // no-op in fp32), and the stage's first block rounds its input back,
  // losslessly; the engine sends them in the compute dtype (set_wire_dtype).
  work.embed = [this, &model, split, batch, seq](int64_t m) {
    return model->embed(sample_micro_batch(split, batch, m).narrow(1, 0, seq)).to(torch::kFloat);
  };
  work.run_blocks = [&model](const torch::Tensor& hidden) {
    return model->run_blocks(hidden).to(torch::kFloat);
  };
  work.loss = [this, &model, split, batch, seq](const torch::Tensor& hidden, int64_t m) {
    return model->head_loss(hidden, sample_micro_batch(split, batch, m).narrow(1, 1, seq));
  };
  return work;
}

// The pipeline runs this stage's share of every micro-batch.
double GptTrainModel::pipeline_step(int64_t step, double scale, double loss_scale, bool overlap) {
  auto& model = parts_.model;
  auto work = stage_work(data::Split::kTrain, step);
  work.gradient_scale = loss_scale;
  if (overlap) work.before_last_backward = [&] { parts_.optimizer->begin_last_micro_batch(); };
  const double loss = parts_.pipeline->run_step(work, parts_.micro_batches, scale);
  if (parts_.tied_embedding)
    parts_.tied_embedding->gather_to_first_stage(model->tied_embedding_weight());
  return loss;
}

// Mean loss over eval.batches global batches of the valid split, without
// gradients or dropout; the same on every rank. With pp > 1 the batches go
// forward through the pipeline; under ZeRO-3 the parameters are gathered.
Outcome GptTrainModel::evaluate() {
  const int64_t seq = config_.model.seq_len, batches = config_.eval.batches;
  const int replicas = groups_.dp().size();  // dp x cp
  auto& model = parts_.model;
  torch::NoGradGuard no_grad;
  // ZeRO-3 holds only shards between steps: gather the parameters as the
  // training forward does (the next step finds them in place and reuses them).
  if (parts_.optimizer->zero_stage() == 3) parts_.optimizer->before_forward();
  model->eval();
  double local_loss = 0;
  for (int64_t b = 0; b < batches; ++b) {
    if (parts_.pipeline) {
      // Forward through the stages; every stage gets the last stage's sum.
      local_loss += parts_.pipeline->run_forward(stage_work(data::Split::kValid, b),
                                                 parts_.micro_batches, 1.0);
      continue;
    }
    for (int64_t m = 0; m < parts_.micro_batches; ++m) {
      auto batch = sample_micro_batch(data::Split::kValid, b, m);
      local_loss += model->loss(batch.narrow(1, 0, seq), batch.narrow(1, 1, seq)).item<double>();
    }
  }
  model->train();
  float loss = float(local_loss / double(batches * parts_.micro_batches * replicas));
  if (replicas > 1) groups_.dp().allreduce(&loss, 1, comm::Role::kOther);
  return Outcome{double(loss), -1};
}

RankHealth GptTrainModel::health() const {
  RankHealth h;
  h.world_rank = groups_.world_rank();
  h.coord = groups_.coord();
  // Only the last pipeline stage computes the loss; the others received it.
  h.computed_loss = !parts_.pipeline || parts_.pipeline->is_last();
  h.loss = last_local_loss_;
  h.update_skipped = parts_.optimizer->last_step_skipped();
  h.own_param = parts_.optimizer->last_nonfinite_gradients().own_param;
  h.reduced_param = parts_.optimizer->last_nonfinite_gradients().reduced_param;
  h.overflow_absorbed = last_overflow_absorbed_;
  h.loss_scale = last_loss_scale_;
  return h;
}

std::pair<std::string, int64_t> GptTrainModel::memory_extra() const {
  return {"gathered_parameters_peak_bytes", parts_.optimizer->peak_gathered_parameter_bytes()};
}

checkpoint::CheckpointParts GptTrainModel::checkpoint_parts() {
  checkpoint::CheckpointParts parts;
  parts.model_shape = checkpoint_shape(config_.model);
  checkpoint::OptimizerPart optimizer;
  optimizer.params = parts_.checkpointed;
  optimizer.optimizer = parts_.optimizer.get();
  optimizer.writes_replicated = groups_.coord().dp == 0 && groups_.coord().cp == 0;
  parts.optimizers.push_back(std::move(optimizer));
  parts.generators.push_back(default_generator_part());
  if (loss_scaler_) {
    // The scale and its growth counter, the same on every rank: they carry
    // over to any layout (a reshard does not restart the scale).
    auto* scaler = loss_scaler_.get();
    parts.generators.push_back(checkpoint::GeneratorPart{
        "training/loss_scaler", [scaler] { return scaler->save(); },
        [scaler](const std::string& bytes) { scaler->load(bytes); }, true});
  }
  if (parts_.diloco) {
    // The outer weights and momentum on every rank (the same layout resumes
    // them; another starts the outer optimizer from the loaded weights);
    // beside dp rank 0, whose state the optimizer entries hold, every
    // replica's own weights and moments (parallel/diloco/replica_state.h).
    auto* sync = parts_.diloco.get();
    parts.generators.push_back(
        checkpoint::GeneratorPart{"diloco/outer", [sync] { return sync->save(); },
                                  [sync](const std::string& bytes) { sync->load(bytes); }, false});
    if (groups_.coord().dp != 0) {
      auto* optimizer = parts_.optimizer.get();
      parts.generators.push_back(checkpoint::GeneratorPart{
          "diloco/replica", [optimizer] { return parallel::save_replica_state(*optimizer); },
          [optimizer](const std::string& bytes) {
            parallel::load_replica_state(*optimizer, bytes);
          },
          false});
    }
  }
  for (auto& [name, generator] : parts_.model->dropout_generators())
    parts.generators.push_back(generator_part("model/" + name, generator));
  parts.restart_generators = [seed = config_.run.seed](int64_t step) {
    restart_default_generator(seed, step);
  };
  parts.has_dropout = config_.model.dropout > 0;
  return parts;
}

void GptTrainModel::dump_tensors(int64_t step, const std::string& dump_dir) {
  // The forward below is collective over tp and cp: world rank 0's tp and cp
  // groups run it (under cp, rank 0 dumps the activations of its positions).
  const auto& coord = groups_.coord();
  if (coord.dp != 0 || coord.pp != 0 || coord.sp != 0) return;
  std::vector<torch::Tensor> grads;
  for (const auto& info : parts_.model->param_infos())
    if (info.tensor.grad().defined()) grads.push_back(info.tensor.grad().reshape({-1}));
  std::vector<torch::Tensor> activations;
  {
    torch::NoGradGuard no_grad;
    // A sample holds seq_len + 1 tokens (inputs and shifted targets); the
    // forward reads the first seq_len of each.
    const int64_t seq = config_.model.seq_len;
    std::vector<int64_t> tokens(size_t(config_.training.micro_batch * (seq + 1)));
    for (int64_t b = 0; b < config_.training.micro_batch; ++b)
      parts_.source->sample(data::Split::kTrain, step, b, &tokens[size_t(b * (seq + 1))], seq + 1);
    auto batch =
        torch::from_blob(tokens.data(), {config_.training.micro_batch, seq + 1}, torch::kLong)
            .narrow(1, 0, seq)
            .to(parts_.device);
    parts_.model->forward(batch, &activations);
  }
  if (groups_.world_rank() != 0) return;
  for (auto& a : activations) a = a.reshape({-1});
  write_f32(dump_dir + "/gradients.f32", torch::cat(grads));
  write_f32(dump_dir + "/activations.f32", torch::cat(activations));
}

// The final weights, for checking exports: only where world rank 0 holds the
// whole model materialised (tp = 1, pp = 1, ZeRO stage below 3).
void GptTrainModel::dump_parameters(const std::string& dump_dir) {
  if (groups_.world_rank() != 0 || groups_.dims().tp > 1 || config_.parallel.zero_stage == 3)
    return;
  std::string index;
  std::vector<torch::Tensor> flat;
  for (const auto& info : parts_.model->param_infos()) {
    index += info.name;
    for (int64_t d : info.tensor.sizes()) index += " " + std::to_string(d);
    index += "\n";
    flat.push_back(info.tensor.detach().reshape({-1}));
  }
  write_f32(dump_dir + "/parameters.f32", torch::cat(flat));
  io::write_file_atomically(dump_dir + "/parameters.txt", index);
  // The forward is collective over cp, which only world rank 0 reaches here.
  if (groups_.dims().pp == 1 && groups_.dims().cp == 1) dump_forward(dump_dir);
}

// One forward of the final weights, without dropout, on this rank's first
// micro-batch of the last step, so that an independent implementation
// loading parameters.f32 can be held to the same logits and loss
// (tests/models/reference_forward_test.sh).
void GptTrainModel::dump_forward(const std::string& dump_dir) {
  const int64_t seq = config_.model.seq_len;
  torch::NoGradGuard no_grad;
  parts_.model->eval();
  const auto batch = sample_micro_batch(data::Split::kTrain, config_.training.steps - 1, 0);
  const auto inputs = batch.narrow(1, 0, seq), targets = batch.narrow(1, 1, seq);
  write_f32(dump_dir + "/forward_logits.f32", parts_.model->forward(inputs));
  const double loss = parts_.model->loss(inputs, targets).item<double>();
  parts_.model->train();
  const auto host_batch = batch.cpu();
  io::write_file_atomically(dump_dir + "/forward_tokens.i64", host_batch.data_ptr<int64_t>(),
                            size_t(host_batch.numel()) * sizeof(int64_t));
  char text[64];
  std::snprintf(text, sizeof text, "%.9g\n", loss);
  io::write_file_atomically(dump_dir + "/forward_loss.txt", std::string(text));
}

}  // namespace cmpi::models
