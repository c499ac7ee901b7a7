#include "models/cnn/resnet_parallelize.h"

#include <torch/torch.h>

#include <stdexcept>
#include <string>
#include <utility>

#include "models/cnn/activation_estimate.h"
#include "models/cnn/resnet_train_model.h"
#include "models/cnn/spatial_conv_layer_factory.h"
#include "models/family/resnet_family.h"
#include "parallel/mesh/process_groups.h"
#include "parallel/pipeline/bidirectional_pipeline.h"
#include "parallel/pipeline/pipeline_engine.h"
#include "parallel/pipeline/pipeline_stages.h"
#include "parallel/zero/data_parallel_optimizer.h"

namespace cmpi::models {
namespace {

// [micro_batch, channels, side, side], or the tile of `rank` of that image.
std::vector<int64_t> image_shape(int64_t micro_batch, int64_t channels, int64_t side,
                                 const parallel::spatial::TileGrid* grid, int rank) {
  if (!grid) return {micro_batch, channels, side, side};
  return {micro_batch, channels, grid->row_span(grid->row_of(rank)).size,
          grid->col_span(grid->col_of(rank)).size};
}

// What the build of one replica needs to know of the whole layout.
struct ResnetLayout {
  const config::Config& config;
  parallel::ProcessGroups& groups;
  const std::vector<CnnLayerSpec>& plan;
  parallel::spatial::Slicing slicing = parallel::spatial::Slicing::kVertical;
  int64_t spatial_stages = 0;  // the first this many pipeline stages run on tiles
  int64_t micro_batches = 1;
};

// Steps 2-4 for the stage `stage_index` of the pipeline (all layers without
// one), on tiles over `sp` if it is one of the spatial stages, with its
// engine over `pp` (pp > 1 only).
void build_stage(const ResnetLayout& l, int64_t stage_index, comm::Communicator& sp,
                 comm::Communicator* pp, ResnetReplica& replica) {
  const auto& t = l.config.training;
  const auto& dims = l.groups.dims();
  const auto range = parallel::stage_of(int64_t(l.plan.size()), dims.pp, stage_index,
                                        l.config.parallel.stage_layers);
  // training.recompute: full recomputes the stage's first recompute_layers
  // bottleneck blocks (all of them for 0); the config refuses selective.
  const int64_t recomputed_blocks = t.recompute != "full"    ? 0
                                    : t.recompute_layers > 0 ? t.recompute_layers
                                                             : l.plan.size();
  const auto& first = l.plan[size_t(range.first_layer)];
  const auto& last = l.plan[size_t(range.end_layer - 1)];
  auto& tiles = replica.spatial;
  auto& stage = replica.stage;
  tiles.spatial = stage_index < l.spatial_stages;
  tiles.sp = &sp;
  if (tiles.spatial) {
    SpatialConvLayerFactory factory(sp, l.slicing);
    stage = CnnStage(l.plan, range.first_layer, range.end_layer, factory, l.config.run.seed,
                     recomputed_blocks);
    tiles.input_grid.emplace(first.in_size, first.in_size, sp.size(), l.slicing);
    if (!stage->has_head())
      tiles.output_grid.emplace(last.out_size, last.out_size, sp.size(), l.slicing);
    tiles.gather_output = !stage->has_head() && stage_index + 1 == l.spatial_stages;
    for (const auto& info : stage->param_infos())
      if (info.name.find(".classifier.") == std::string::npos)
        tiles.tiled_parameters.push_back(info.tensor);
  } else {
    LocalConvLayerFactory factory;
    stage = CnnStage(l.plan, range.first_layer, range.end_layer, factory, l.config.run.seed,
                     recomputed_blocks);
  }
  const int rank = sp.rank();
  const auto pixels = [&](int64_t side) {
    if (!tiles.spatial) return side * side;
    const parallel::spatial::TileGrid grid(side, side, sp.size(), l.slicing);
    return grid.tile_pixels(rank);
  };
  int64_t in_flight = dims.pp > 1 ? 0 : 1;
  if (pp) {
    const int64_t count = l.config.parallel.bidirectional ? l.micro_batches / 2 : l.micro_batches;
    in_flight = parallel::max_in_flight(parallel::make_pipeline_schedule(l.config.parallel.schedule)
                                            ->actions(stage_index, dims.pp, count));
  }
  tiles.activation_bytes = saved_activation_elements(l.plan, range.first_layer, range.end_layer,
                                                     pixels, stage->recomputed_blocks()) *
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
  replica.pipeline = std::make_unique<parallel::PipelineEngine>(
      *pp, parallel::make_pipeline_schedule(l.config.parallel.schedule), input, output);
}

// Step 5: every DP replica starts from DP rank 0's weights and statistics.
void broadcast_over_dp(CnnStage& stage, parallel::ProcessGroups& groups) {
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

}  // namespace

std::unique_ptr<TrainModel> parallelize_resnet(const config::Config& config,
                                               parallel::ProcessGroups& groups) {
  const auto& t = config.training;
  const auto& dims = groups.dims();
  if (config.model.kind != config::ModelFamily::kResnet)
    throw std::invalid_argument(std::string("parallelize_resnet: model.kind is ") +
                                config::name_of(config.model.kind) + ", expected resnet");
  if (dims.tp > 1)
    throw std::invalid_argument("tensor parallelism is not supported for model.kind resnet (" +
                                dims.to_string() + ")");
  if (dims.sp > 1 && dims.zero_stage > 1)
    throw std::invalid_argument("spatial parallelism supports ZeRO stages 0 and 1 (" +
                                dims.to_string() + ")");
  if (t.global_batch % (t.micro_batch * dims.dp) != 0)
    throw std::invalid_argument("training.global_batch (" + std::to_string(t.global_batch) +
                                ") is not a multiple of training.micro_batch (" +
                                std::to_string(t.micro_batch) + ") x dp (" +
                                std::to_string(dims.dp) + ")");
  ResnetParts parts;
  parts.micro_batches = t.global_batch / (t.micro_batch * dims.dp);
  at::set_num_threads(int(t.threads));

  // 1. The plan and the spatial cut.
  parts.plan = resnet_layers(resnet_options(config.model, config.run.seed));
  ResnetLayout layout{config, groups, parts.plan};
  layout.micro_batches = parts.micro_batches;
  if (dims.sp > 1) {
    layout.slicing = parallel::spatial::parse_slicing(config.parallel.spatial_slicing);
    layout.spatial_stages =
        config.parallel.spatial_stages > 0 ? config.parallel.spatial_stages : dims.pp;
  }

  // 2-5. Replica A: this rank's stage, tiles, engine; equal over dp.
  build_stage(layout, groups.coord().pp, groups.sp(), dims.pp > 1 ? &groups.pp() : nullptr,
              parts.a);
  broadcast_over_dp(parts.a.stage, groups);

  // 6. The optimizer. The two replicas' gradients are summed after backward,
  // and the spatial gradients over sp: nothing may be reduced over dp before.
  parallel::DataParallelOptimizerOptions optimizer_options;
  optimizer_options.adamw = {t.lr, t.beta1, t.beta2, t.eps, t.weight_decay};
  optimizer_options.zero_stage = int(config.parallel.zero_stage);
  optimizer_options.bucket_bytes = config.parallel.dp_bucket_bytes;
  optimizer_options.shard_gradient_memory = config.parallel.zero_gradient_memory == "shard";
  optimizer_options.overlap_grad_reduce =
      t.overlap_grad_reduce && !config.parallel.bidirectional && dims.sp == 1;
  parts.a.optimizer = parallel::make_data_parallel_optimizer(parts.a.stage->param_infos(),
                                                             optimizer_options, groups);

  // 7. Replica B of the bi-directional pipeline.
  if (config.parallel.bidirectional) {
    if (dims.pp < 2 || parts.micro_batches % 2 != 0)
      throw std::invalid_argument(
          "parallel.bidirectional needs parallel.pipeline >= 2 and an even number of "
          "micro-batches per data-parallel rank, got " +
          dims.to_string() + " and " + std::to_string(parts.micro_batches) + " micro-batches");
    parts.reversed_pp = parallel::reversed_pipeline_group(groups);
    if (dims.sp > 1) parts.sp_b = parallel::duplicate_group(groups, comm::GroupKind::kSp);
    build_stage(layout, parts.reversed_pp->rank(), parts.sp_b ? *parts.sp_b : groups.sp(),
                parts.reversed_pp.get(), parts.b);
    broadcast_over_dp(parts.b.stage, groups);
    parts.b.optimizer = parallel::make_data_parallel_optimizer(parts.b.stage->param_infos(),
                                                               optimizer_options, groups);
  }
  return std::make_unique<ResnetTrainModel>(config, groups, std::move(parts));
}

}  // namespace cmpi::models
