// PipelineTiedEmbedding: keeps the two copies of a tied embedding/output
// table identical when the first pipeline stage holds the embedding and the
// last one the head (Megatron's "embedding group").
//
// Both copies start equal (initialised from the same seed and name) and get
// the same AdamW update as long as their reduced gradients are the same
// bits. Each step:
//   1. after every micro-batch's backward, gather_to_first_stage(): the last
//      stage sends its copy's gradient to the first, which adds it to its
//      own: the first stage then holds the gradient of the tied table in the
//      single-stage model (role gradient, op p2p: lossy where the policy
//      says so, as any gradient);
//   2. only the first stage reduces that gradient over its dp group (the
//      data-parallel optimizer's tied_gradient: lossy codecs, error feedback,
//      whatever the dp policy does there);
//   3. share_reduced(): the first stage broadcasts each reduced bucket to the
//      last (role gradient, op broadcast). The chain broadcast leaves the
//      root the decoded version of what it sent (comm/algorithms/
//      chain_broadcast.cpp), so both ends hold the same bits through any
//      codec, and both copies take the same update.
// That is the pipeline traffic of the allreduce it replaces (one table each
// way; at ZeRO 1-3 the way back carries only each rank's 1/dp piece), and the
// last stage's dp group no longer reduces the table at all. Equality needs no
// assumption about either stage's dp reduction: it is made by construction.
//
// With two stages the pp group is that pair. With more, a two-rank
// communicator of kind pp (same policy rules) is split off the pp group, and
// its statistics are added to the pp group's after every call, so the
// traffic is reported under pp. With one stage there is nothing to do.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "comm/adaptive_policy.h"

namespace cmpi::comm {
class Communicator;
class Policy;
}  // namespace cmpi::comm

namespace cmpi::parallel {

class PipelineTiedEmbedding {
 public:
  // Collective over `pp` (every stage calls it; the middle ones keep nothing).
  PipelineTiedEmbedding(comm::Communicator& pp, const comm::Policy& policy);
  ~PipelineTiedEmbedding();
  PipelineTiedEmbedding(const PipelineTiedEmbedding&) = delete;
  PipelineTiedEmbedding& operator=(const PipelineTiedEmbedding&) = delete;

  // True on the first and last stage when there are at least two stages.
  bool holds_copy() const { return group_ != nullptr; }

  // True on the first stage: the one that reduces the table's gradient over
  // dp (when it holds a copy).
  bool reduces() const;

  // Step 1: on the first stage weight.grad() becomes the sum of both copies'
  // gradients; on the last it stays as it is (its dp reduction is replaced
  // by share_reduced). On both `weight` must be the tied table (float32, the
  // same shape; an undefined gradient counts as zero); elsewhere it is
  // ignored. Collective over the first and last stage.
  void gather_to_first_stage(const torch::Tensor& weight);
  // Step 3: data[0, n) on the last stage becomes the first stage's, and both
  // hold the same bits. `part` numbers the calls of a step (each its own
  // error-feedback residual). Collective over the first and last stage;
  // a no-op elsewhere.
  void share_reduced(size_t part, float* data, size_t n);
  // Preset auto: the two-rank group's step-boundary decision (only when it
  // is a group of its own; the pp group decides with ProcessGroups::adapt).
  // Call on every rank after ProcessGroups::adapt, with the same loss.
  std::vector<comm::AutoDecision> adapt(int64_t step, double previous_loss);

 private:
  // The two-rank group's traffic, reported under pp.
  void report_under_pp();

  comm::Communicator& pp_;
  std::unique_ptr<comm::Communicator> own_;  // the two-rank group when pp has > 2 ranks
  comm::Communicator* group_ = nullptr;      // pp_ or own_, or nullptr when not holding a copy
  std::vector<float> received_;              // the first stage: the last stage's gradient
};

}  // namespace cmpi::parallel
