#include "trainer/cnn_trainer.h"

#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <optional>
#include <stdexcept>
#include <thread>

#include "data/synthetic_images.h"
#include "io/atomic_file.h"
#include "io/directories.h"
#include "models/cnn/activation_estimate.h"
#include "models/cnn/cnn_stage.h"
#include "models/cnn/resnet_plan.h"
#include "models/cnn/spatial_conv_layer_factory.h"
#include "parallel/bidirectional_pipeline.h"
#include "parallel/data_parallel_optimizer.h"
#include "parallel/pipeline_engine.h"
#include "parallel/pipeline_stages.h"
#include "parallel/process_groups.h"
#include "parallel/spatial/sp_reductions.h"
#include "parallel/spatial/tile_gather.h"
#include "parallel/spatial/tile_geometry.h"
#include "trainer/auto_report.h"
#include "trainer/lr_schedule.h"
#include "trainer/metrics.h"
#include "trainer/model_shape.h"
#include "trainer/nonfinite_guard.h"
#include "trainer/step_report.h"

namespace cmpi::trainer {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

data::SyntheticImageOptions image_options(const Config& c) {
  data::SyntheticImageOptions o;
  o.seed = c.data.seed;
  o.image_size = c.model.image_size;
  o.channels = c.model.channels;
  o.classes = c.model.classes;
  o.noise = c.data.noise;
  return o;
}

// One micro-batch: images [micro_batch, C, S, S] and their labels.
struct ImageBatch {
  torch::Tensor images, labels;
};

// How one replica's pipeline stage meets spatial parallelism: whether it runs
// on tiles, the grid of its input and output images, whether it gathers its
// output tiles into whole images (the last spatial stage before a
// non-spatial tail), and the sp communicator its layers use.
struct SpatialStage {
  bool spatial = false;
  bool gather_output = false;
  std::optional<parallel::spatial::TileGrid> input_grid, output_grid;
  comm::Communicator* sp = nullptr;
  // Bytes autograd keeps for backward at the schedule's peak (micro-batches
  // in flight), estimated from the plan (models/cnn/activation_estimate.h).
  int64_t activation_bytes = 0;
  // Parameters whose gradients are summed over sp: every spatial layer's,
  // not the classifier's (replicated after the global pool, whole gradients).
  std::vector<torch::Tensor> tiled_parameters;
};

// [micro_batch, channels, side, side], or the tile of `rank` of that image.
std::vector<int64_t> image_shape(int64_t micro_batch, int64_t channels, int64_t side,
                                 const parallel::spatial::TileGrid* grid, int rank) {
  if (!grid) return {micro_batch, channels, side, side};
  return {micro_batch, channels, grid->row_span(grid->row_of(rank)).size,
          grid->col_span(grid->col_of(rank)).size};
}

}  // namespace

struct CnnTrainer::Impl {
  Impl(const Config& c, parallel::ProcessGroups& g, TrainerOptions o)
      : config(c), groups(g), options(std::move(o)), images(image_options(c)), model(nullptr) {}

  void setup();
  // The stage `stage_index` of the pipeline (all layers without one), on
  // tiles over `sp` if it is one of the spatial stages; its engine over `pp`
  // (pp > 1 only).
  void build_stage(int64_t stage_index, comm::Communicator& sp, comm::Communicator* pp,
                   models::CnnStage& stage, SpatialStage& spatial,
                   std::unique_ptr<parallel::PipelineEngine>& engine);
  // The stage's forward, gathering its output tiles where it must.
  torch::Tensor stage_forward(models::CnnStage& stage, const SpatialStage& spatial,
                              const torch::Tensor& x) const;
  // What the first stage is fed: the images, or this sp rank's tile of them.
  torch::Tensor stage_input(const SpatialStage& spatial, const torch::Tensor& images) const;
  // Sums the spatial layers' gradients over sp (before the dp reduction).
  void reduce_spatial_gradients();
  // Replica B of the bi-directional pipeline: this rank's stage S-1-r, its
  // engine over the reversed pp group, its optimizer.
  void setup_replica_b(const parallel::DataParallelOptimizerOptions& optimizer_options);
  // Loss (mean over the global batch) of one step; counts right answers.
  double train_step(int64_t step);
  // Micro-batches [first, first + count) of the step through `engine`.
  double pipeline_step(parallel::PipelineEngine& engine, models::CnnStage& stage,
                       const SpatialStage& tiles, double& counter, int64_t step, int64_t first,
                       int64_t count, double scale, bool overlap);
  // Both replicas, B on its own thread so each fills the other's bubbles;
  // then every stage's two copies sum their gradients.
  double bidirectional_step(int64_t step, double scale);
  // This rank's micro-batch m of global batch `batch`: positions
  // (dp · micro_batches + m) · micro_batch ... of that batch.
  ImageBatch micro_batch(data::ImageSplit split, int64_t batch, int64_t m) const;
  // Cross-entropy of the logits; adds the right answers to `counter`.
  torch::Tensor classify_loss(const torch::Tensor& logits, const torch::Tensor& labels,
                              double& counter) const;
  // (loss, accuracy) over eval.batches global batches of the valid split.
  std::pair<double, double> evaluate();
  void broadcast_parameters(models::CnnStage& stage);
  void average_running_statistics(models::CnnStage& stage);
  ExtraGroupStats mirrored_groups() const;
  comm::OpCounters comm_totals() const;
  std::string groups_json() const;
  std::string memory_json() const;
  RankHealth health() const;

  const Config& config;
  parallel::ProcessGroups& groups;
  TrainerOptions options;
  data::SyntheticImages images;
  std::vector<models::CnnLayerSpec> plan;
  models::CnnStage model;
  std::unique_ptr<parallel::DataParallelOptimizer> optimizer;
  std::unique_ptr<parallel::PipelineEngine> pipeline;  // pp > 1 only
  SpatialStage spatial;
  parallel::spatial::Slicing slicing = parallel::spatial::Slicing::kVertical;
  int64_t spatial_stages = 0;  // the first this many pipeline stages run on tiles
  // parallel.bidirectional only: replica B.
  std::unique_ptr<comm::Communicator> reversed_pp;
  models::CnnStage model_b{nullptr};
  std::unique_ptr<parallel::PipelineEngine> pipeline_b;
  SpatialStage spatial_b;
  // Replica B's halos and spatial reductions run on B's thread while A's run
  // on this one: their own copy of the sp group, so their messages cannot
  // match each other's.
  std::unique_ptr<comm::Communicator> sp_b;
  std::unique_ptr<parallel::DataParallelOptimizer> optimizer_b;
  double correct_b = 0;
  std::unique_ptr<NonfiniteGuard> guard;
  LrSchedule schedule;
  int64_t micro_batches = 1;
  double correct = 0;  // right answers of this rank's micro-batches in the step
  double last_accuracy = 0;
  double last_local_loss = 0;
  double last_grad_norm = 0;
};

CnnTrainer::CnnTrainer(const Config& config, parallel::ProcessGroups& groups,
                       TrainerOptions options)
    : impl_(std::make_unique<Impl>(config, groups, std::move(options))) {
  impl_->setup();
}

CnnTrainer::~CnnTrainer() = default;

void CnnTrainer::Impl::setup() {
  const auto& t = config.training;
  const auto& dims = groups.dims();
  if (config.model.kind != "resnet")
    throw std::invalid_argument("cnn trainer: model.kind is " + config.model.kind +
                                ", expected resnet");
  if (dims.tp > 1)
    throw std::invalid_argument(
        "cnn trainer: tensor parallelism is not supported for model.kind resnet (" +
        dims.to_string() + ")");
  if (dims.sp > 1 && dims.zero_stage > 1)
    throw std::invalid_argument("cnn trainer: spatial parallelism supports ZeRO stages 0 and 1 (" +
                                dims.to_string() + ")");
  if (t.global_batch % (t.micro_batch * dims.dp) != 0)
    throw std::invalid_argument("training.global_batch (" + std::to_string(t.global_batch) +
                                ") is not a multiple of training.micro_batch (" +
                                std::to_string(t.micro_batch) + ") x dp (" +
                                std::to_string(dims.dp) + ")");
  micro_batches = t.global_batch / (t.micro_batch * dims.dp);
  at::set_num_threads(int(t.threads));
  plan = models::resnet_layers(resnet_options(config.model, config.run.seed));
  if (dims.sp > 1) {
    slicing = parallel::spatial::parse_slicing(config.parallel.spatial_slicing);
    spatial_stages = config.parallel.spatial_stages > 0 ? config.parallel.spatial_stages : dims.pp;
  }
  build_stage(groups.coord().pp, groups.sp(), dims.pp > 1 ? &groups.pp() : nullptr, model, spatial,
              pipeline);
  const auto infos = model->param_infos();
  broadcast_parameters(model);

  parallel::DataParallelOptimizerOptions optimizer_options;
  optimizer_options.adamw = {t.lr, t.beta1, t.beta2, t.eps, t.weight_decay};
  optimizer_options.zero_stage = int(config.parallel.zero_stage);
  optimizer_options.bucket_bytes = config.parallel.dp_bucket_bytes;
  // The two replicas' gradients are summed after backward: nothing may be
  // reduced over dp before that.
  // So must the spatial gradients be summed over sp first.
  optimizer_options.overlap_grad_reduce =
      t.overlap_grad_reduce && !config.parallel.bidirectional && dims.sp == 1;
  optimizer = parallel::make_data_parallel_optimizer(infos, optimizer_options, groups);
  if (config.parallel.bidirectional) setup_replica_b(optimizer_options);
  schedule.peak = t.lr;
  schedule.min_lr = t.min_lr;
  schedule.warmup_steps = t.warmup_steps;
  schedule.total_steps = t.steps;
  guard = std::make_unique<NonfiniteGuard>(t, groups);
}

void CnnTrainer::Impl::setup_replica_b(
    const parallel::DataParallelOptimizerOptions& optimizer_options) {
  const auto& dims = groups.dims();
  if (dims.pp < 2 || micro_batches % 2 != 0)
    throw std::invalid_argument(
        "parallel.bidirectional needs parallel.pipeline >= 2 and an even number of "
        "micro-batches per data-parallel rank, got " +
        dims.to_string() + " and " + std::to_string(micro_batches) + " micro-batches");
  reversed_pp = parallel::reversed_pipeline_group(groups);
  if (dims.sp > 1) sp_b = parallel::duplicate_group(groups, comm::GroupKind::kSp);
  build_stage(reversed_pp->rank(), sp_b ? *sp_b : groups.sp(), reversed_pp.get(), model_b,
              spatial_b, pipeline_b);
  broadcast_parameters(model_b);
  optimizer_b =
      parallel::make_data_parallel_optimizer(model_b->param_infos(), optimizer_options, groups);
}

void CnnTrainer::Impl::build_stage(int64_t stage_index, comm::Communicator& sp,
                                   comm::Communicator* pp, models::CnnStage& stage,
                                   SpatialStage& tiles,
                                   std::unique_ptr<parallel::PipelineEngine>& engine) {
  const auto& t = config.training;
  const auto& dims = groups.dims();
  const auto range =
      parallel::stage_of(int64_t(plan.size()), dims.pp, stage_index, config.parallel.stage_layers);
  const auto& first = plan[size_t(range.first_layer)];
  const auto& last = plan[size_t(range.end_layer - 1)];
  tiles.spatial = stage_index < spatial_stages;
  tiles.sp = &sp;
  if (tiles.spatial) {
    models::SpatialConvLayerFactory factory(sp, slicing);
    stage = models::CnnStage(plan, range.first_layer, range.end_layer, factory, config.run.seed);
    tiles.input_grid.emplace(first.in_size, first.in_size, sp.size(), slicing);
    if (!stage->has_head())
      tiles.output_grid.emplace(last.out_size, last.out_size, sp.size(), slicing);
    tiles.gather_output = !stage->has_head() && stage_index + 1 == spatial_stages;
    for (const auto& info : stage->param_infos())
      if (info.name.find(".classifier.") == std::string::npos)
        tiles.tiled_parameters.push_back(info.tensor);
  } else {
    models::LocalConvLayerFactory factory;
    stage = models::CnnStage(plan, range.first_layer, range.end_layer, factory, config.run.seed);
  }
  const int rank = sp.rank();
  const auto pixels = [&](int64_t side) {
    if (!tiles.spatial) return side * side;
    const parallel::spatial::TileGrid grid(side, side, sp.size(), slicing);
    return grid.tile_pixels(rank);
  };
  int64_t in_flight = dims.pp > 1 ? 0 : 1;
  if (pp) {
    const int64_t count = config.parallel.bidirectional ? micro_batches / 2 : micro_batches;
    in_flight = parallel::max_in_flight(parallel::make_pipeline_schedule(config.parallel.schedule)
                                            ->actions(stage_index, dims.pp, count));
  }
  tiles.activation_bytes =
      models::saved_activation_elements(plan, range.first_layer, range.end_layer, pixels) *
      t.micro_batch * int64_t(sizeof(float)) * in_flight;
  if (!pp) return;
  const auto* input_tiles = tiles.input_grid ? &*tiles.input_grid : nullptr;
  const auto* output_tiles =
      tiles.output_grid && !tiles.gather_output ? &*tiles.output_grid : nullptr;
  const auto input =
      image_shape(t.micro_batch, first.in_channels, first.in_size, input_tiles, sp.rank());
  auto output =
      image_shape(t.micro_batch, last.out_channels, last.out_size, output_tiles, sp.rank());
  if (stage->has_head()) output = {t.micro_batch, last.out_channels};
  engine = std::make_unique<parallel::PipelineEngine>(
      *pp, parallel::make_pipeline_schedule(config.parallel.schedule), input, output);
}

// The tail after the last spatial stage is replicated over sp: every sp rank
// gathers the whole image and runs the same tail on it (Megatron's
// gather_from_tp_region; backward keeps the own tile, no message).
torch::Tensor CnnTrainer::Impl::stage_forward(models::CnnStage& stage, const SpatialStage& tiles,
                                              const torch::Tensor& x) const {
  auto out = stage->forward(x);
  if (tiles.gather_output)
    out = parallel::spatial::gather_tiles(out.contiguous(), *tiles.output_grid, *tiles.sp);
  return out;
}

torch::Tensor CnnTrainer::Impl::stage_input(const SpatialStage& tiles,
                                            const torch::Tensor& images) const {
  if (!tiles.spatial) return images;
  return parallel::spatial::tile_of(images, *tiles.input_grid, tiles.sp->rank()).contiguous();
}

void CnnTrainer::Impl::reduce_spatial_gradients() {
  if (spatial.spatial)
    parallel::spatial::allreduce_spatial_gradients(spatial.tiled_parameters, groups.sp());
  if (spatial_b.spatial)
    parallel::spatial::allreduce_spatial_gradients(spatial_b.tiled_parameters, groups.sp());
}

// Every DP replica starts from DP rank 0's weights and statistics.
void CnnTrainer::Impl::broadcast_parameters(models::CnnStage& stage) {
  if (groups.dims().dp == 1) return;
  torch::NoGradGuard no_grad;
  auto tensors = stage->running_statistics();
  for (const auto& info : stage->param_infos()) tensors.push_back(info.tensor);
  for (auto& p : tensors) {
    auto contiguous = p.contiguous();
    groups.dp().broadcast(contiguous.data_ptr<float>(), size_t(p.numel()), 0, comm::Role::kWeight);
    p.copy_(contiguous);
  }
}

// One allreduce of all of them, flattened (there are two per BatchNorm).
void CnnTrainer::Impl::average_running_statistics(models::CnnStage& stage) {
  const int dp = groups.dims().dp;
  if (dp == 1) return;
  torch::NoGradGuard no_grad;
  auto statistics = stage->running_statistics();
  if (statistics.empty()) return;
  std::vector<torch::Tensor> flat;
  for (const auto& s : statistics) flat.push_back(s.reshape({-1}));
  auto all = torch::cat(flat);
  groups.dp().allreduce(all.data_ptr<float>(), size_t(all.numel()), comm::Role::kOther);
  all.div_(double(dp));
  int64_t offset = 0;
  for (auto& s : statistics) {
    s.copy_(all.narrow(0, offset, s.numel()).view_as(s));
    offset += s.numel();
  }
}

ImageBatch CnnTrainer::Impl::micro_batch(data::ImageSplit split, int64_t batch, int64_t m) const {
  const int64_t size = config.training.micro_batch;
  const int64_t s = config.model.image_size;
  ImageBatch out;
  out.images = torch::empty({size, config.model.channels, s, s}, torch::kFloat);
  out.labels = torch::empty({size}, torch::kLong);
  float* pixels = out.images.data_ptr<float>();
  int64_t* labels = out.labels.data_ptr<int64_t>();
  const int64_t first = (int64_t(groups.coord().dp) * micro_batches + m) * size;
  for (int64_t b = 0; b < size; ++b) {
    const int64_t index = batch * config.training.global_batch + first + b;
    images.fill(split, index, pixels + b * images.pixels_per_image());
    labels[b] = images.label(split, index);
  }
  return out;
}

torch::Tensor CnnTrainer::Impl::classify_loss(const torch::Tensor& logits,
                                              const torch::Tensor& labels, double& counter) const {
  counter += double(logits.detach().argmax(1).eq(labels).sum().item<int64_t>());
  return torch::nn::functional::cross_entropy(logits, labels);
}

double CnnTrainer::Impl::train_step(int64_t step) {
  const int dp = groups.dims().dp;
  const double scale = 1.0 / double(micro_batches * dp);
  optimizer->zero_grad();
  optimizer->before_forward();
  model->train();
  correct = 0;
  double local_loss = 0;
  if (optimizer_b) {
    local_loss = bidirectional_step(step, scale);
  } else if (pipeline) {
    local_loss =
        pipeline_step(*pipeline, model, spatial, correct, step, 0, micro_batches, scale, true);
  } else {
    for (int64_t m = 0; m < micro_batches; ++m) {
      const auto batch = micro_batch(data::ImageSplit::kTrain, step, m);
      auto logits = stage_forward(model, spatial, stage_input(spatial, batch.images));
      auto loss = classify_loss(logits, batch.labels, correct);
      if (m + 1 == micro_batches) optimizer->begin_last_micro_batch();
      (loss * scale).backward();
      local_loss += loss.item<double>() * scale;
    }
  }
  last_local_loss = local_loss;
  reduce_spatial_gradients();
  last_grad_norm = optimizer->step(schedule.at(step), config.training.grad_clip);
  average_running_statistics(model);
  if (optimizer_b) {
    // The same reduced gradient and norm as A's copies: the same update.
    optimizer_b->step(schedule.at(step), config.training.grad_clip);
    average_running_statistics(model_b);
  }

  // Only a last stage counted right answers (A's on pp rank S-1, B's on pp
  // rank 0); the loss is already on every stage.
  float counted = float(correct + correct_b);
  if (pipeline) groups.pp().allreduce(&counted, 1, comm::Role::kOther);
  float totals[2] = {float(local_loss), counted};
  if (dp > 1) groups.dp().allreduce(totals, 2, comm::Role::kOther);
  last_accuracy = double(totals[1]) / double(config.training.global_batch);
  return double(totals[0]);
}

// The first stage draws the images, the last one their labels.
double CnnTrainer::Impl::pipeline_step(parallel::PipelineEngine& engine, models::CnnStage& stage,
                                       const SpatialStage& tiles, double& counter, int64_t step,
                                       int64_t first, int64_t count, double scale, bool overlap) {
  parallel::PipelineStageWork work;
  if (overlap) work.before_last_backward = [&] { optimizer->begin_last_micro_batch(); };
  work.embed = [&, first](int64_t m) {
    return stage_input(tiles, micro_batch(data::ImageSplit::kTrain, step, first + m).images);
  };
  work.run_blocks = [&](const torch::Tensor& x) { return stage_forward(stage, tiles, x); };
  work.loss = [&, first](const torch::Tensor& logits, int64_t m) {
    return classify_loss(logits, micro_batch(data::ImageSplit::kTrain, step, first + m).labels,
                         counter);
  };
  return engine.run_step(work, count, scale);
}

// A runs micro-batches [0, M/2) on this thread, B [M/2, M) on another; their
// engines use different communicators (pp, reversed pp), so neither's
// messages can match the other's. Then stage s's two copies (pp ranks s and
// S-1-s) sum their gradients and average their BatchNorm statistics.
double CnnTrainer::Impl::bidirectional_step(int64_t step, double scale) {
  const int64_t half = micro_batches / 2;
  optimizer_b->zero_grad();
  optimizer_b->before_forward();
  model_b->train();
  correct_b = 0;
  double loss_b = 0;
  std::exception_ptr failure_b;
  std::thread replica_b([&] {
    try {
      loss_b =
          pipeline_step(*pipeline_b, model_b, spatial_b, correct_b, step, half, half, scale, false);
    } catch (...) {
      failure_b = std::current_exception();
    }
  });
  double loss_a = 0;
  try {
    loss_a = pipeline_step(*pipeline, model, spatial, correct, step, 0, half, scale, false);
  } catch (...) {
    // B may be waiting on a rank that will never send: the caller aborts
    // the job (main), which ends it.
    replica_b.detach();
    throw;
  }
  replica_b.join();
  if (failure_b) std::rethrow_exception(failure_b);

  std::vector<torch::Tensor> grads_a, grads_b;
  for (const auto& info : model->param_infos()) grads_a.push_back(info.tensor.grad());
  for (const auto& info : model_b->param_infos()) grads_b.push_back(info.tensor.grad());
  parallel::combine_with_mirror(groups.pp(), grads_a, grads_b, comm::Role::kGradient,
                                parallel::MirrorCombine::kSum);
  parallel::combine_with_mirror(groups.pp(), model->running_statistics(),
                                model_b->running_statistics(), comm::Role::kOther,
                                parallel::MirrorCombine::kAverage);
  return loss_a + loss_b;
}

std::pair<double, double> CnnTrainer::Impl::evaluate() {
  const int64_t batches = config.eval.batches;
  const int dp = groups.dims().dp;
  torch::NoGradGuard no_grad;
  model->eval();
  const double saved_correct = correct;
  correct = 0;
  double loss = 0;
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t m = 0; m < micro_batches; ++m) {
      const auto batch = micro_batch(data::ImageSplit::kValid, b, m);
      const auto logits = stage_forward(model, spatial, stage_input(spatial, batch.images));
      loss += classify_loss(logits, batch.labels, correct).item<double>();
    }
  model->train();
  float totals[2] = {float(loss / double(batches * micro_batches * dp)), float(correct)};
  correct = saved_correct;
  if (dp > 1) groups.dp().allreduce(totals, 2, comm::Role::kOther);
  return {double(totals[0]), double(totals[1]) / double(batches * config.training.global_batch)};
}

// Replica B's mirrored groups (parallel.bidirectional).
ExtraGroupStats CnnTrainer::Impl::mirrored_groups() const {
  ExtraGroupStats extra;
  if (reversed_pp) extra.emplace_back("pp_reverse", &reversed_pp->stats());
  if (sp_b) extra.emplace_back("sp_reverse", &sp_b->stats());
  return extra;
}

comm::OpCounters CnnTrainer::Impl::comm_totals() const {
  return trainer::comm_totals(groups, mirrored_groups());
}

std::string CnnTrainer::Impl::groups_json() const {
  return trainer::groups_json(groups, mirrored_groups());
}

std::string CnnTrainer::Impl::memory_json() const {
  return optimizer_memory_json(*optimizer, "activation_estimate_bytes",
                               spatial.activation_bytes + spatial_b.activation_bytes);
}

RankHealth CnnTrainer::Impl::health() const {
  RankHealth h;
  h.world_rank = groups.world_rank();
  h.coord = groups.coord();
  h.computed_loss = !pipeline || pipeline->is_last() || (pipeline_b && pipeline_b->is_last());
  h.loss = last_local_loss;
  h.update_skipped = optimizer->last_step_skipped();
  h.own_param = optimizer->last_nonfinite_gradients().own_param;
  h.reduced_param = optimizer->last_nonfinite_gradients().reduced_param;
  return h;
}

TrainResult CnnTrainer::run() {
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
  MetricsLog log(metrics_path, is_root ? print_every : 0);

  TrainResult result;
  result.parameters =
      models::resnet_parameter_count(resnet_options(s.config.model, s.config.run.seed));
  int64_t local_parameters = 0;
  for (const auto& info : s.model->param_infos()) local_parameters += info.tensor.numel();
  if (s.model_b)
    for (const auto& info : s.model_b->param_infos()) local_parameters += info.tensor.numel();
  if (is_root && print_every > 0) {
    const auto& m = s.config.model;
    std::printf(
        "model: ResNet-%lld (width %lld, %lld layers) %lld parameters (%lld on rank 0) | layout "
        "%s | %lld micro-batches of %lld per rank | data: synthetic %lldx%lldx%lld images, %lld "
        "classes, noise %.3g\n",
        (long long)m.depth, (long long)m.width, (long long)s.plan.size(),
        (long long)result.parameters, (long long)local_parameters,
        s.groups.dims().to_string().c_str(), (long long)s.micro_batches, (long long)t.micro_batch,
        (long long)m.channels, (long long)m.image_size, (long long)m.image_size,
        (long long)m.classes, s.config.data.noise);
    std::fflush(stdout);
  }

  const auto run_start = Clock::now();
  const bool adaptive = s.groups.policy().config().preset == "auto";
  for (int64_t step = 0; step < t.steps; ++step) {
    const auto before = s.comm_totals();
    const double cpu_start = process_cpu_seconds();
    const auto step_start = Clock::now();
    // Preset auto: the process groups settle their routes (the bidirectional
    // pipeline's mirrored groups keep raw routes).
    std::vector<comm::AutoDecision> decisions;
    if (adaptive) decisions = s.groups.adapt(step);
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
    result.accuracies.push_back(s.last_accuracy);
    const StepVerdict verdict = s.guard->check(step + 1, s.last_grad_norm, s.health());
    result.skipped_steps = s.guard->skipped_steps();

    StepRecord r;
    r.step = step + 1;
    r.total_steps = t.steps;
    r.loss = loss;
    r.lr = s.schedule.at(step);
    r.grad_norm = s.last_grad_norm;
    r.skipped = verdict.skipped;
    r.skipped_steps = result.skipped_steps;
    r.step_ms = step_seconds * 1e3;
    if (cpu_start >= 0 && cpu_end >= 0) r.cpu_ms = (cpu_end - cpu_start) * 1e3;
    r.accuracy = s.last_accuracy;
    r.images_per_second = double(t.global_batch) / step_seconds;
    record_step_traffic(r, before, after, *s.optimizer);
    const int64_t every = s.config.eval.every;
    if (every > 0 && ((step + 1) % every == 0 || step + 1 == t.steps) && !verdict.stop) {
      const auto [val_loss, val_accuracy] = s.evaluate();
      r.has_val_loss = true;
      r.val_loss = val_loss;
      r.val_accuracy = val_accuracy;
      result.val_losses.emplace_back(step + 1, val_loss);
      result.val_accuracies.emplace_back(step + 1, val_accuracy);
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
  }
  result.seconds = seconds_since(run_start);
  result.peak_state_bytes = s.optimizer->peak_bytes();
  log.close();
  if (is_root && !s.options.run_dir.empty()) {
    if (!s.options.resolved_config.empty()) result.run_files.push_back("config.yaml");
    if (!metrics_path.empty()) result.run_files.push_back("metrics.jsonl");
  }
  const auto totals = s.comm_totals();
  result.wire_bytes = totals.wire_bytes;
  result.raw_bytes = totals.raw_bytes;
  result.images_per_second = double(t.global_batch * t.steps) / result.seconds;
  return result;
}

}  // namespace cmpi::trainer
