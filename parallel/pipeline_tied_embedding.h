// PipelineTiedEmbedding: keeps the two copies of a tied embedding/output
// table identical when the first pipeline stage holds the embedding and the
// last one the head (Megatron's "embedding group").
//
// Both copies start equal (initialised from the same seed and name) and get
// the same AdamW update as long as their gradients are equal. Each step,
// after every micro-batch's backward and before the optimizer, the two
// gradients are summed between the first and last stage with an allreduce
// over a two-rank group, which is exactly the gradient of the tied table in
// the single-stage model. The allreduce gives the same bits on both ranks
// even through a lossy codec (comm/algorithms: the owner keeps the decoded
// copy), so the copies stay identical whatever the policy.
//
// With two stages the pp group is that group. With more, a two-rank
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

  // Replaces weight.grad() by the sum of both copies' gradients (role
  // gradient). On the first and last stage `weight` must be the tied table
  // (float32, the same shape on both; an undefined gradient counts as zero);
  // elsewhere it is ignored. Collective over the first and last stage.
  void sync_gradients(const torch::Tensor& weight);
  // Preset auto: the two-rank group's step-boundary decision (only when it
  // is a group of its own; the pp group decides with ProcessGroups::adapt).
  // Call on every rank after ProcessGroups::adapt.
  std::vector<comm::AutoDecision> adapt(int64_t step);

 private:
  comm::Communicator& pp_;
  std::unique_ptr<comm::Communicator> own_;  // the two-rank group when pp has > 2 ranks
  comm::Communicator* group_ = nullptr;      // pp_ or own_, or nullptr when not holding a copy
};

}  // namespace cmpi::parallel
