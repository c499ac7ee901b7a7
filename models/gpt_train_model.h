// GptTrainModel: the GPT as a TrainModel. Per step, for each of this rank's
// micro-batches: forward, loss scaled by 1/(micro-batches x dp) (DiLoCo:
// 1/micro-batches, each replica's own mean), backward
// (gradients accumulate in the optimizer's buffer); with pp > 1 the pipeline
// engine runs the schedule instead and the last stage sends its copy of the
// tied embedding's gradient to the first; then the data-parallel optimizer
// reduces (the first stage shares the tied table's result with the last),
// clips and steps. training.precision fp16 multiplies the loss by a dynamic
// loss scale before backward (models/loss_scaler.h) and has the optimizer
// divide the float32 gradients by it; an overflow skips the step and backs
// the scale off (counted by the non-finite guard as a skipped step). Under
// parallel.dp_sync: diloco the step is an inner step of this replica (after
// diloco.warmup_steps every-step ones), after which DilocoSync synchronises
// the fragments due. Built by
// parallelize_gpt (gpt_parallelize.h), which fills GptParts.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "checkpoint/optimizer_state.h"
#include "config/config.h"
#include "data/token_source.h"
#include "models/gpt.h"
#include "models/loss_scaler.h"
#include "models/train_model.h"
#include "parallel/pipeline/pipeline_engine.h"

namespace cmpi::parallel {
class DilocoSync;
class PipelineTiedEmbedding;
class ProcessGroups;
}  // namespace cmpi::parallel

namespace cmpi::models {

// What parallelize_gpt builds for one rank.
struct GptParts {
  Gpt model{nullptr};
  std::shared_ptr<const data::TokenSource> source;
  std::unique_ptr<parallel::PipelineEngine> pipeline;               // pp > 1 only
  std::unique_ptr<parallel::PipelineTiedEmbedding> tied_embedding;  // pp > 1, tied only
  std::unique_ptr<parallel::DataParallelOptimizer> optimizer;
  // parallel.dp_sync: diloco only: the outer side (the optimizer then does
  // not reduce over dp, or stops after the warm-up).
  std::unique_ptr<parallel::DilocoSync> diloco;
  // This rank's parameters against the global layout, in the optimizer's order.
  std::vector<checkpoint::CheckpointedParam> checkpointed;
  int64_t micro_batches = 1;  // per rank per step
  // Where the model's tensors live; batches are moved there as they are drawn.
  torch::Device device = torch::Device(torch::kCPU);
};

class GptTrainModel : public TrainModel {
 public:
  GptTrainModel(const config::Config& config, parallel::ProcessGroups& groups, GptParts parts);
  ~GptTrainModel() override;

  std::string describe() const override;
  int64_t parameter_count() const override;
  int64_t local_parameter_count() const override;
  int64_t tokens_per_sample() const override { return config_.model.seq_len; }
  double loss_floor() const override { return parts_.source->loss_floor(); }

  std::vector<comm::AutoDecision> adapt(int64_t step, double previous_loss) override;
  Outcome train_step(int64_t step, double lr, double clip, const std::string& dump_dir) override;
  double last_grad_norm() const override { return last_grad_norm_; }
  RankHealth health() const override;
  Outcome evaluate() override;

  parallel::DataParallelOptimizer& optimizer() override { return *parts_.optimizer; }
  std::pair<std::string, int64_t> memory_extra() const override;
  checkpoint::CheckpointParts checkpoint_parts() override;
  void dump_parameters(const std::string& dump_dir) override;
  double loss_scale() const override { return last_loss_scale_; }
  OuterSync last_outer_sync() const override { return last_outer_sync_; }

 private:
  // Tokens [micro_batch, seq + 1] of this rank's micro-batch m of global
  // batch `batch` (a fresh tensor: the pipeline's backward reads them after
  // later micro-batches are drawn).
  torch::Tensor sample_micro_batch(data::Split split, int64_t batch, int64_t m) const;
  parallel::PipelineStageWork stage_work(data::Split split, int64_t batch);
  double pipeline_step(int64_t step, double scale, double loss_scale, bool overlap);
  // The last step's own gradients and block activations (world rank 0's tp
  // group runs the forward).
  void dump_tensors(int64_t step, const std::string& dump_dir);
  void dump_forward(const std::string& dump_dir);

  const config::Config& config_;
  parallel::ProcessGroups& groups_;
  GptParts parts_;
  // training.precision fp16: the dynamic loss scale (none otherwise).
  std::unique_ptr<LossScaler> loss_scaler_;
  double last_loss_scale_ = 0;           // the scale the last step ran with (0: none)
  bool last_overflow_absorbed_ = false;  // its update was skipped for a gradient overflow
  double last_grad_norm_ = 0;
  double last_local_loss_ = 0;  // this rank's own micro-batches, before the dp average
  OuterSync last_outer_sync_;   // DiLoCo: what the last step synchronised
};

}  // namespace cmpi::models
