#include "models/gpt_parallelize.h"

#include <torch/torch.h>

#include <stdexcept>
#include <string>
#include <utility>

#include "models/family/gpt_family.h"
#include "models/gpt_param_unit.h"
#include "models/gpt_train_model.h"
#include "parallel/diloco/diloco_sync.h"
#include "parallel/host_staging.h"
#include "parallel/mesh/process_groups.h"
#include "parallel/pipeline/pipeline_engine.h"
#include "parallel/pipeline/pipeline_stages.h"
#include "parallel/pipeline/pipeline_tied_embedding.h"
#include "parallel/zero/data_parallel_optimizer.h"

namespace cmpi::models {
namespace {

// Every DP replica starts from DP rank 0's weights, whatever each rank's RNG did.
void broadcast_over_dp(const std::vector<parallel::ParamInfo>& infos,
                       parallel::ProcessGroups& groups) {
  if (groups.dp().size() == 1) return;  // dp x cp ranks hold one replica's weights
  torch::NoGradGuard no_grad;
  for (const auto& info : infos) {
    auto p = info.tensor;
    auto host = parallel::host_contiguous(p);  // a device's parameters through host memory
    groups.dp().broadcast(host.data_ptr<float>(), size_t(p.numel()), 0, comm::Role::kWeight);
    p.copy_(host);
  }
}

// This rank's parameters against the global layout: a tensor-parallel
// parameter is slice tp_rank of tp along its split dimension.
std::vector<checkpoint::CheckpointedParam> global_layout(const Gpt& model,
                                                         parallel::ProcessGroups& groups) {
  std::vector<checkpoint::CheckpointedParam> out;
  for (const auto& layout : model->layouts()) {
    checkpoint::SliceSpec slice{layout.tensor.sizes().vec(), int32_t(layout.split_dim), 0, 1};
    if (layout.split_dim >= 0) {
      slice.global_shape[size_t(layout.split_dim)] *= groups.tp().size();
      slice.index = groups.tp().rank();
      slice.count = groups.tp().size();
    }
    out.push_back({layout.name, slice, false, layout.used_rows});
  }
  return out;
}

// DiLoCo's fragment of each parameter (parallel/diloco/sync_schedule.h):
// block N's by its global layer, the final norm and an untied head the last
// fragment's, the embeddings and the tied table (on both pipeline ends) the
// first's, so that both copies of the table are synchronised together.
std::vector<int> diloco_fragments(const std::vector<parallel::ParamInfo>& infos, int64_t layers,
                                  int64_t fragments) {
  std::vector<int> out;
  for (const auto& info : infos) {
    const GptParamUnit unit = gpt_param_unit(info.name);
    int fragment = 0;  // the embedding, and the tied table on either pipeline end
    if (info.tied_across_stages)
      fragment = 0;
    else if (unit.kind == GptParamUnit::Kind::kBlock)
      fragment = parallel::SyncSchedule::fragment_of_layer(unit.layer, layers, fragments);
    else if (unit.kind == GptParamUnit::Kind::kHead)
      fragment = int(fragments - 1);
    out.push_back(fragment);
  }
  return out;
}

}  // namespace

std::unique_ptr<TrainModel> parallelize_gpt(const config::Config& config,
                                            parallel::ProcessGroups& groups,
                                            GptBuildOptions options) {
  const auto& t = config.training;
  const int dp = groups.dims().dp;
  if (t.global_batch % (t.micro_batch * dp) != 0)
    throw std::invalid_argument("training.global_batch (" + std::to_string(t.global_batch) +
                                ") is not a multiple of training.micro_batch (" +
                                std::to_string(t.micro_batch) + ") x dp (" + std::to_string(dp) +
                                ")");
  GptParts parts;
  parts.source = options.source ? options.source
                                : data::open_token_source(config.data, data::token_demand(config),
                                                          groups.world().mpi(), /*log=*/nullptr);
  parts.micro_batches = t.global_batch / (t.micro_batch * dp);
  at::set_num_threads(int(t.threads));
  torch::manual_seed(config.run.seed);

  // 1-2. This rank's stage of the model, tensor-parallel over tp.
  auto model_options = gpt_options(config.model);
  model_options.seed = config.run.seed;
  model_options.precision = t.precision == config::Precision::kBf16   ? ComputePrecision::kBf16
                            : t.precision == config::Precision::kFp16 ? ComputePrecision::kFp16
                                                                      : ComputePrecision::kFp32;
  model_options.recompute = t.recompute == "full"        ? Recompute::kFull
                            : t.recompute == "selective" ? Recompute::kSelective
                                                         : Recompute::kNone;
  model_options.recompute_layers = t.recompute_layers;
  model_options.sequence_parallel = config.parallel.sequence_parallel;
  model_options.tp_sums_in_compute_dtype = config.parallel.tp_forward_sum == "compute";
  if (model_options.sequence_parallel && options.dump_tensors)
    throw std::invalid_argument(
        "dumping tensors needs every block's whole output on one rank; "
        "parallel.sequence_parallel splits them over tp");
  // Per-layer ZeRO-3 generates each rank's shards in the optimizer: the model
  // holds stand-ins, and no rank builds a whole parameter tensor.
  const bool layered_zero3 =
      config.parallel.zero_stage == 3 && config.parallel.zero3_gather == "layer";
  model_options.materialize_parameters = !layered_zero3;
  const auto stage = parallel::stage_of(config.model.layers, groups.dims().pp, groups.coord().pp,
                                        gpt_stage_layers(config, groups.dims()));
  parts.model =
      Gpt(model_options, groups,
          StagePlan{stage.first_layer, stage.end_layer, stage.has_embedding, stage.has_head});
  auto& model = parts.model;
  // Initialised on the CPU above (the CPU run's weights, bit for bit), then
  // moved whole: parameters and the attention's tables (GptImpl::to).
  if (options.cuda_device >= 0) {
    parts.device = torch::Device(torch::kCUDA, int8_t(options.cuda_device));
    model->to(parts.device);
  }

  // 3-4. The pipeline over pp and the tied table across its ends.
  const bool tied = config.model.tie_embeddings;
  if (groups.dims().pp > 1) {
    if (options.dump_tensors)
      throw std::invalid_argument("dumping tensors needs the whole model on one rank (pp = 1), " +
                                  groups.dims().to_string());
    // Under context parallelism a stage holds its cp rank's part of the
    // sequence, and under sequence parallelism sends its tp rank's part of
    // that to the same tp rank of the next stage.
    const int64_t local = config.model.seq_len / groups.dims().cp;
    const int64_t positions = config.parallel.sequence_parallel ? local / groups.dims().tp : local;
    parts.pipeline = std::make_unique<parallel::PipelineEngine>(
        groups.pp(), parallel::make_pipeline_schedule(config.parallel.schedule),
        std::vector<int64_t>{t.micro_batch, positions, config.model.hidden});
    // Stage outputs hold compute-dtype values: they cross at its word size.
    parts.pipeline->set_wire_dtype(model->compute_dtype());
    parts.pipeline->set_device(parts.device);
    if (tied)
      parts.tied_embedding =
          std::make_unique<parallel::PipelineTiedEmbedding>(groups.pp(), groups.policy());
  }
  auto param_infos = model->param_infos();
  parts.checkpointed = global_layout(model, groups);

  // How this layout makes the token embedding special, flagged on its
  // ParamInfo for the optimizer (parallel/param_info.h) and on its
  // checkpoint entry:
  //  - untied, its gradient holds only the rows of the step's tokens: its own
  //    buckets, role embedding_gradient, so the policy may send it
  //    block-sparse (compression.sparse_embedding);
  //  - tied over pp > 1, the table on both pipeline ends: the first stage adds
  //    the last stage's gradient to its own after backward (pipeline_step),
  //    so its buckets are reduced over dp only in step(), and only there
  //    (late); the last stage takes the reduced table from it
  //    (PipelineTiedEmbedding::share_reduced), so both copies stay the same
  //    bits, and leaves the copy to the first stage in the global gradient
  //    norm and in checkpoints.
  const bool tied_across_stages = parts.tied_embedding && parts.tied_embedding->holds_copy();
  const bool head_copy = tied && model->stage().has_head && !model->stage().has_embedding;
  for (size_t i = 0; i < param_infos.size(); ++i) {
    auto& info = param_infos[i];
    if (info.name != kTokenEmbeddingWeight) continue;
    info.sparse_gradient = !tied && model->stage().has_embedding;
    info.tied_across_stages = tied_across_stages;
    info.late_gradient = tied_across_stages && parts.tied_embedding->reduces();
    info.counted_on_other_stage = head_copy;
    parts.checkpointed[i].written_elsewhere = head_copy;
  }

  // 5. Equal replicas over dp.
  if (!layered_zero3) broadcast_over_dp(param_infos, groups);

  // 6. The optimizer. Weight decay on matrices only (ParamInfo::weight_decay).
  parallel::DataParallelOptimizerOptions optimizer_options;
  optimizer_options.adamw = {t.lr, t.beta1, t.beta2, t.eps, t.weight_decay};
  optimizer_options.zero_stage = int(config.parallel.zero_stage);
  optimizer_options.bucket_bytes = config.parallel.dp_bucket_bytes;
  optimizer_options.shard_gradient_memory = config.parallel.zero_gradient_memory == "shard";
  optimizer_options.overlap_grad_reduce = t.overlap_grad_reduce;
  if (tied_across_stages) {
    auto* tied_embedding = parts.tied_embedding.get();
    optimizer_options.tied_gradient = parallel::DataParallelOptimizerOptions::TiedGradient{
        tied_embedding->reduces(), [tied_embedding](size_t part, float* data, size_t n) {
          tied_embedding->share_reduced(part, data, n);
        }};
  }
  if (layered_zero3) {
    optimizer_options.layer_schedule = model->layer_schedule();
    auto* gpt = model.get();
    optimizer_options.initial_values = [gpt](size_t param, size_t offset, size_t length,
                                             float* out) {
      gpt->fill_initial_values(param, offset, length, out);
    };
  }
  // DiLoCo: every dp rank steps alone between syncs (no dp reduction); with
  // a warm-up the optimizer reduces over dp until the train model stops it.
  const bool diloco = config.parallel.dp_sync == "diloco";
  optimizer_options.reduce_over_dp = !diloco || config.parallel.diloco.warmup_steps > 0;
  parts.optimizer = parallel::make_data_parallel_optimizer(param_infos, optimizer_options, groups);
  model->set_layer_gate(parts.optimizer->layer_gate());

  // 7. DiLoCo's outer side, over the parameters the optimizer now holds.
  if (diloco) {
    const auto& d = config.parallel.diloco;
    parallel::DilocoSyncOptions sync;
    sync.outer = {d.outer_lr, d.outer_momentum};
    sync.sync_every = d.sync_every;
    sync.fragments = d.fragments;
    sync.warmup_steps = d.warmup_steps;
    sync.fragment_of_param = diloco_fragments(param_infos, config.model.layers, d.fragments);
    sync.bucket_bytes = config.parallel.dp_bucket_bytes;
    if (tied_across_stages) {
      auto* tied_embedding = parts.tied_embedding.get();
      sync.tied = parallel::DilocoSyncOptions::TiedShare{
          tied_embedding->reduces(), [tied_embedding](size_t part, float* data, size_t n) {
            tied_embedding->share_reduced(part, data, n);
          }};
    }
    parts.diloco = std::make_unique<parallel::DilocoSync>(param_infos, std::move(sync), groups);
  }
  return std::make_unique<GptTrainModel>(config, groups, std::move(parts));
}

}  // namespace cmpi::models
