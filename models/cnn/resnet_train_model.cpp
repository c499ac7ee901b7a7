#include "models/cnn/resnet_train_model.h"

#include <cstdio>
#include <exception>
#include <thread>
#include <utility>

#include "models/family/resnet_family.h"
#include "models/generator_state.h"
#include "parallel/mesh/process_groups.h"
#include "parallel/pipeline/bidirectional_pipeline.h"
#include "parallel/pipeline/pipeline_engine.h"
#include "parallel/spatial/sp_reductions.h"
#include "parallel/spatial/tile_gather.h"
#include "parallel/zero/data_parallel_optimizer.h"

namespace cmpi::models {
namespace {

data::SyntheticImageOptions image_options(const config::Config& c) {
  data::SyntheticImageOptions o;
  o.seed = c.data.seed;
  o.image_size = c.model.image_size;
  o.channels = c.model.channels;
  o.classes = c.model.classes;
  o.noise = c.data.noise;
  return o;
}

// A stage's parameters against the global layout: whole tensors (no tensor
// parallelism), named by the global layer index.
std::vector<checkpoint::CheckpointedParam> global_layout(CnnStage& stage) {
  std::vector<checkpoint::CheckpointedParam> out;
  for (const auto& info : stage->param_infos())
    out.push_back({info.name, checkpoint::SliceSpec{info.tensor.sizes().vec(), -1, 0, 1}});
  return out;
}

}  // namespace

ResnetTrainModel::ResnetTrainModel(const config::Config& config, parallel::ProcessGroups& groups,
                                   ResnetParts parts)
    : config_(config), groups_(groups), parts_(std::move(parts)), images_(image_options(config)) {}

ResnetTrainModel::~ResnetTrainModel() = default;

int64_t ResnetTrainModel::parameter_count() const {
  return resnet_parameter_count(resnet_options(config_.model, config_.run.seed));
}

int64_t ResnetTrainModel::local_parameter_count() const {
  int64_t local = 0;
  for (const auto* replica : {&parts_.a, &parts_.b})
    if (replica->stage)
      for (const auto& parameter : replica->stage->parameters()) local += parameter.numel();
  return local;
}

std::string ResnetTrainModel::describe() const {
  const auto& m = config_.model;
  const auto& t = config_.training;
  char line[512];
  std::snprintf(
      line, sizeof line,
      "model: ResNet-%lld (width %lld, %lld layers) %lld parameters (%lld on rank 0) | layout "
      "%s | %lld micro-batches of %lld per rank | data: synthetic %lldx%lldx%lld images, %lld "
      "classes, noise %.3g",
      (long long)m.depth, (long long)m.width, (long long)parts_.plan.size(),
      (long long)parameter_count(), (long long)local_parameter_count(),
      groups_.dims().to_string().c_str(), (long long)parts_.micro_batches, (long long)t.micro_batch,
      (long long)m.channels, (long long)m.image_size, (long long)m.image_size, (long long)m.classes,
      config_.data.noise);
  return line;
}

// The bidirectional pipeline's mirrored groups keep raw routes.
std::vector<comm::AutoDecision> ResnetTrainModel::adapt(int64_t step, double previous_loss) {
  return groups_.adapt(step, previous_loss);
}

ResnetTrainModel::ImageBatch ResnetTrainModel::micro_batch(data::ImageSplit split, int64_t batch,
                                                           int64_t m) const {
  const int64_t size = config_.training.micro_batch;
  const int64_t s = config_.model.image_size;
  ImageBatch out;
  out.images = torch::empty({size, config_.model.channels, s, s}, torch::kFloat);
  out.labels = torch::empty({size}, torch::kLong);
  float* pixels = out.images.data_ptr<float>();
  int64_t* labels = out.labels.data_ptr<int64_t>();
  const int64_t first = (int64_t(groups_.coord().dp) * parts_.micro_batches + m) * size;
  for (int64_t b = 0; b < size; ++b) {
    const int64_t index = batch * config_.training.global_batch + first + b;
    images_.fill(split, index, pixels + b * images_.pixels_per_image());
    labels[b] = images_.label(split, index);
  }
  return out;
}

torch::Tensor ResnetTrainModel::classify_loss(const torch::Tensor& logits,
                                              const torch::Tensor& labels, double& counter) const {
  counter += double(logits.detach().argmax(1).eq(labels).sum().item<int64_t>());
  return torch::nn::functional::cross_entropy(logits, labels);
}

// The tail after the last spatial stage is replicated over sp: every sp rank
// gathers the whole image and runs the same tail on it (Megatron's
// gather_from_tp_region; backward keeps the own tile, no message).
torch::Tensor ResnetTrainModel::stage_forward(CnnStage& stage, const SpatialStage& tiles,
                                              const torch::Tensor& x) const {
  auto out = stage->forward(x);
  if (tiles.gather_output)
    out = parallel::spatial::gather_tiles(out.contiguous(), *tiles.output_grid, *tiles.sp);
  return out;
}

torch::Tensor ResnetTrainModel::stage_input(const SpatialStage& tiles,
                                            const torch::Tensor& images) const {
  if (!tiles.spatial) return images;
  return parallel::spatial::tile_of(images, *tiles.input_grid, tiles.sp->rank()).contiguous();
}

void ResnetTrainModel::reduce_spatial_gradients() {
  for (auto* replica : {&parts_.a, &parts_.b})
    if (replica->spatial.spatial)
      parallel::spatial::allreduce_spatial_gradients(replica->spatial.tiled_parameters,
                                                     groups_.sp());
}

// One allreduce of all of them, flattened (there are two per BatchNorm).
void ResnetTrainModel::average_running_statistics(CnnStage& stage) {
  const int dp = groups_.dims().dp;
  if (dp == 1) return;
  torch::NoGradGuard no_grad;
  auto statistics = stage->running_statistics();
  if (statistics.empty()) return;
  std::vector<torch::Tensor> flat;
  for (const auto& s : statistics) flat.push_back(s.reshape({-1}));
  auto all = torch::cat(flat);
  groups_.dp().allreduce(all.data_ptr<float>(), size_t(all.numel()), comm::Role::kOther);
  all.div_(double(dp));
  int64_t offset = 0;
  for (auto& s : statistics) {
    s.copy_(all.narrow(0, offset, s.numel()).view_as(s));
    offset += s.numel();
  }
}

Outcome ResnetTrainModel::train_step(int64_t step, double lr, double clip, const std::string&) {
  const int dp = groups_.dims().dp;
  const int64_t micro_batches = parts_.micro_batches;
  const double scale = 1.0 / double(micro_batches * dp);
  auto& a = parts_.a;
  a.optimizer->zero_grad();
  a.optimizer->before_forward();
  a.stage->train();
  correct_ = 0;
  correct_b_ = 0;
  double local_loss = 0;
  if (parts_.b.optimizer) {
    local_loss = bidirectional_step(step, scale);
  } else if (a.pipeline) {
    local_loss = pipeline_step(a, correct_, step, 0, micro_batches, scale, true);
  } else {
    for (int64_t m = 0; m < micro_batches; ++m) {
      const auto batch = micro_batch(data::ImageSplit::kTrain, step, m);
      auto logits = stage_forward(a.stage, a.spatial, stage_input(a.spatial, batch.images));
      auto loss = classify_loss(logits, batch.labels, correct_);
      if (m + 1 == micro_batches) a.optimizer->begin_last_micro_batch();
      (loss * scale).backward();
      local_loss += loss.item<double>() * scale;
    }
  }
  last_local_loss_ = local_loss;
  reduce_spatial_gradients();
  last_grad_norm_ = a.optimizer->step(lr, clip);
  average_running_statistics(a.stage);
  if (parts_.b.optimizer) {
    // The same reduced gradient and norm as A's copies: the same update.
    parts_.b.optimizer->step(lr, clip);
    average_running_statistics(parts_.b.stage);
  }

  // Only a last stage counted right answers (A's on pp rank S-1, B's on pp
  // rank 0); the loss is already on every stage.
  float counted = float(correct_ + correct_b_);
  if (a.pipeline) groups_.pp().allreduce(&counted, 1, comm::Role::kOther);
  float totals[2] = {float(local_loss), counted};
  if (dp > 1) groups_.dp().allreduce(totals, 2, comm::Role::kOther);
  return Outcome{double(totals[0]), double(totals[1]) / double(config_.training.global_batch)};
}

// What `replica`'s stage does with micro-batch first + m of `batch`: the
// first stage draws the images, the last one their labels and counts the
// right answers in `counter`.
parallel::PipelineStageWork ResnetTrainModel::stage_work(ResnetReplica& replica,
                                                         data::ImageSplit split, int64_t batch,
                                                         int64_t first, double& counter) {
  parallel::PipelineStageWork work;
  work.embed = [this, &replica, split, batch, first](int64_t m) {
    return stage_input(replica.spatial, micro_batch(split, batch, first + m).images);
  };
  work.run_blocks = [this, &replica](const torch::Tensor& x) {
    return stage_forward(replica.stage, replica.spatial, x);
  };
  work.loss = [this, split, batch, first, &counter](const torch::Tensor& logits, int64_t m) {
    return classify_loss(logits, micro_batch(split, batch, first + m).labels, counter);
  };
  return work;
}

double ResnetTrainModel::pipeline_step(ResnetReplica& replica, double& counter, int64_t step,
                                       int64_t first, int64_t count, double scale, bool overlap) {
  auto work = stage_work(replica, data::ImageSplit::kTrain, step, first, counter);
  if (overlap) work.before_last_backward = [&] { parts_.a.optimizer->begin_last_micro_batch(); };
  return replica.pipeline->run_step(work, count, scale);
}

// A runs micro-batches [0, M/2) on this thread, B [M/2, M) on another; their
// engines use different communicators (pp, reversed pp), so neither's
// messages can match the other's. Then stage s's two copies (pp ranks s and
// S-1-s) sum their gradients and average their BatchNorm statistics.
double ResnetTrainModel::bidirectional_step(int64_t step, double scale) {
  const int64_t half = parts_.micro_batches / 2;
  auto& a = parts_.a;
  auto& b = parts_.b;
  b.optimizer->zero_grad();
  b.optimizer->before_forward();
  b.stage->train();
  double loss_b = 0;
  std::exception_ptr failure_b;
  std::thread replica_b([&] {
    try {
      loss_b = pipeline_step(b, correct_b_, step, half, half, scale, false);
    } catch (...) {
      failure_b = std::current_exception();
    }
  });
  double loss_a = 0;
  try {
    loss_a = pipeline_step(a, correct_, step, 0, half, scale, false);
  } catch (...) {
    // B may be waiting on a rank that will never send: the caller aborts
    // the job (main), which ends it.
    replica_b.detach();
    throw;
  }
  replica_b.join();
  if (failure_b) std::rethrow_exception(failure_b);

  std::vector<torch::Tensor> grads_a, grads_b;
  for (const auto& info : a.stage->param_infos()) grads_a.push_back(info.tensor.grad());
  for (const auto& info : b.stage->param_infos()) grads_b.push_back(info.tensor.grad());
  parallel::combine_with_mirror(groups_.pp(), grads_a, grads_b, comm::Role::kGradient,
                                parallel::MirrorCombine::kSum);
  parallel::combine_with_mirror(groups_.pp(), a.stage->running_statistics(),
                                b.stage->running_statistics(), comm::Role::kOther,
                                parallel::MirrorCombine::kAverage);
  return loss_a + loss_b;
}

// (loss, accuracy) over eval.batches global batches of the valid split. With
// pp > 1 the batches go forward through the pipeline: every stage gets the
// last stage's loss; the right answers are counted there and summed over pp.
Outcome ResnetTrainModel::evaluate() {
  const int64_t batches = config_.eval.batches;
  const int dp = groups_.dims().dp;
  auto& a = parts_.a;
  torch::NoGradGuard no_grad;
  a.stage->eval();
  double correct = 0;
  double loss = 0;
  for (int64_t b = 0; b < batches; ++b) {
    if (a.pipeline) {
      loss += a.pipeline->run_forward(stage_work(a, data::ImageSplit::kValid, b, 0, correct),
                                      parts_.micro_batches, 1.0);
      continue;
    }
    for (int64_t m = 0; m < parts_.micro_batches; ++m) {
      const auto batch = micro_batch(data::ImageSplit::kValid, b, m);
      const auto logits = stage_forward(a.stage, a.spatial, stage_input(a.spatial, batch.images));
      loss += classify_loss(logits, batch.labels, correct).item<double>();
    }
  }
  a.stage->train();
  float counted = float(correct);
  if (a.pipeline) groups_.pp().allreduce(&counted, 1, comm::Role::kOther);
  float totals[2] = {float(loss / double(batches * parts_.micro_batches * dp)), counted};
  if (dp > 1) groups_.dp().allreduce(totals, 2, comm::Role::kOther);
  return Outcome{double(totals[0]),
                 double(totals[1]) / double(batches * config_.training.global_batch)};
}

RankHealth ResnetTrainModel::health() const {
  const auto& a = parts_.a;
  const auto& b = parts_.b;
  RankHealth h;
  h.world_rank = groups_.world_rank();
  h.coord = groups_.coord();
  h.computed_loss = !a.pipeline || a.pipeline->is_last() || (b.pipeline && b.pipeline->is_last());
  h.loss = last_local_loss_;
  h.update_skipped = a.optimizer->last_step_skipped();
  h.own_param = a.optimizer->last_nonfinite_gradients().own_param;
  h.reduced_param = a.optimizer->last_nonfinite_gradients().reduced_param;
  return h;
}

// Replica B's mirrored groups (parallel.bidirectional).
ExtraGroupStats ResnetTrainModel::extra_groups() const {
  ExtraGroupStats extra;
  if (parts_.reversed_pp) extra.emplace_back("pp_reverse", &parts_.reversed_pp->stats());
  if (parts_.sp_b) extra.emplace_back("sp_reverse", &parts_.sp_b->stats());
  return extra;
}

std::pair<std::string, int64_t> ResnetTrainModel::memory_extra() const {
  return {"activation_estimate_bytes",
          parts_.a.spatial.activation_bytes + parts_.b.spatial.activation_bytes};
}

// Replica A of every stage is on some rank: A writes, B (the same weights,
// the same update) only loads. Spatial replicas hold equal copies: sp rank 0
// writes them. The running statistics, averaged over dp after every step,
// are written by dp rank 0 and re-cut like parameters on a reshard.
checkpoint::CheckpointParts ResnetTrainModel::checkpoint_parts() {
  const auto& coord = groups_.coord();
  checkpoint::CheckpointParts parts;
  parts.model_shape = checkpoint_shape(config_.model);
  for (auto* replica : {&parts_.a, &parts_.b}) {
    if (!replica->optimizer) continue;
    const bool writer = replica == &parts_.a && coord.sp == 0;
    checkpoint::OptimizerPart optimizer;
    optimizer.params = global_layout(replica->stage);
    optimizer.optimizer = replica->optimizer.get();
    optimizer.writes = writer;
    optimizer.writes_replicated = coord.dp == 0;
    parts.optimizers.push_back(std::move(optimizer));
    for (auto& [name, tensor] : replica->stage->named_running_statistics()) {
      checkpoint::TensorPart statistic;
      statistic.param = {name, checkpoint::SliceSpec{tensor.sizes().vec(), -1, 0, 1}};
      statistic.data = tensor.data_ptr<float>();
      statistic.writes = writer && coord.dp == 0;
      parts.tensors.push_back(std::move(statistic));
    }
  }
  parts.generators.push_back(default_generator_part());
  parts.restart_generators = [seed = config_.run.seed](int64_t step) {
    restart_default_generator(seed, step);
  };
  return parts;
}

}  // namespace cmpi::models
