// NonfiniteGuard: what the trainer does about a step whose loss or gradients
// went NaN or infinite. The optimizer has already refused to apply the update
// of a step whose global gradient norm is non-finite; after every step the
// guard agrees over the world (one control allreduce of a few flag bits) whether
// any rank's loss or gradients went non-finite. Only then does it gather
// every rank's view (RankHealth) to world rank 0, which writes the message.
//
// training.on_nonfinite decides what follows: abort stops at the first such
// step; skip_step counts the step as skipped and goes on, unless more than
// training.max_skipped_steps steps in a row were skipped. Under fp16 loss
// scaling a gradient overflow with a finite loss, while the scale can still
// back off, is skipped and counted without either (loss scaling expects
// them). Every rank reaches
// the same verdict at the same step, so a stop is thrown on every rank at
// once (TrainingStopped) and printed by world rank 0 only.
//
// Torch-free: the trainer fills RankHealth from its loss and the optimizer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "models/train_model.h"
#include "parallel/mesh/parallel_dims.h"

namespace cmpi::parallel {
class ProcessGroups;
}

namespace cmpi::trainer {

// One rank's view of one step (filled by the model, models/train_model.h).
using models::RankHealth;

struct StepVerdict {
  bool nonfinite = false;  // some rank's loss or gradients went non-finite
  bool skipped = false;    // the step's update was not applied
  bool stop = false;       // training ends at this step
  // A gradient overflow the fp16 loss scale absorbed (skipped, not
  // non-finite for the policy): one line for the log; empty otherwise.
  std::string note;
  // On world rank 0 when nonfinite: what went non-finite where, and what
  // follows (skipped, or why training stops). Elsewhere: empty, or a pointer
  // to rank 0's message when stopping.
  std::string message;
};

// What went non-finite at `step` (1-based), on which ranks: the loss (its
// value, the ranks that computed it), the gradients (the global norm, each
// parameter and rank where they were found, and whether in the rank's own
// backward or only after the reduction over dp).
std::string describe_nonfinite_step(int64_t step, double grad_norm,
                                    const std::vector<RankHealth>& ranks);

class NonfiniteGuard {
 public:
  // Throws std::invalid_argument for an unknown policy or max_skipped_steps < 1.
  NonfiniteGuard(const config::TrainingConfig& training, parallel::ProcessGroups& groups);

  // Collective over the world, once after every step (1-based), with the
  // step's global gradient norm (the same on every rank).
  StepVerdict check(int64_t step, double grad_norm, const RankHealth& mine);

  int64_t skipped_steps() const { return skipped_steps_; }
  // Of those, fp16 gradient overflows the loss scale absorbed.
  int64_t overflow_steps() const { return overflow_steps_; }

 private:
  // Every rank's RankHealth on world rank 0 (empty elsewhere).
  std::vector<RankHealth> gather(const RankHealth& mine) const;

  bool skip_;  // training.on_nonfinite: skip_step
  int64_t max_skipped_in_a_row_;
  parallel::ProcessGroups& groups_;
  int64_t skipped_steps_ = 0;
  int64_t overflow_steps_ = 0;
  int64_t skipped_in_a_row_ = 0;
};

}  // namespace cmpi::trainer
