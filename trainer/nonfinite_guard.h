// NonfiniteGuard: what the trainer does about a step whose loss or gradients
// went NaN or infinite. The optimizer has already refused to apply the update
// of a step whose global gradient norm is non-finite; after every step the
// guard agrees over the world (one MPI_Allreduce of a few flag bits) whether
// any rank's loss or gradients went non-finite. Only then does it gather
// every rank's view (RankHealth) to world rank 0, which writes the message.
//
// training.on_nonfinite decides what follows: abort stops at the first such
// step; skip_step counts the step as skipped and goes on, unless more than
// training.max_skipped_steps steps in a row were skipped. Every rank reaches
// the same verdict at the same step, so a stop is thrown on every rank at
// once (TrainingStopped) and printed by world rank 0 only.
//
// Torch-free: the trainer fills RankHealth from its loss and the optimizer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "parallel/parallel_dims.h"
#include "trainer/config.h"

namespace cmpi::parallel {
class ProcessGroups;
}

namespace cmpi::trainer {

// One rank's view of one step.
struct RankHealth {
  int world_rank = 0;
  parallel::GridCoord coord;
  bool computed_loss = false;   // this rank computes the loss (the last pipeline stage)
  double loss = 0;              // over its own micro-batches, when computed_loss
  bool update_skipped = false;  // the optimizer skipped the update (non-finite global norm)
  // See parallel::NonfiniteGradients: the first parameter whose gradient was
  // non-finite from this rank's own backward, and after the reduction over dp.
  std::string own_param;
  std::string reduced_param;

  bool loss_nonfinite() const;
};

struct StepVerdict {
  bool nonfinite = false;  // some rank's loss or gradients went non-finite
  bool skipped = false;    // the step's update was not applied
  bool stop = false;       // training ends at this step
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
  NonfiniteGuard(const TrainingConfig& training, parallel::ProcessGroups& groups);

  // Collective over the world, once after every step (1-based), with the
  // step's global gradient norm (the same on every rank).
  StepVerdict check(int64_t step, double grad_norm, const RankHealth& mine);

  int64_t skipped_steps() const { return skipped_steps_; }

 private:
  // Every rank's RankHealth on world rank 0 (empty elsewhere).
  std::vector<RankHealth> gather(const RankHealth& mine) const;

  bool skip_;  // training.on_nonfinite: skip_step
  int64_t max_skipped_in_a_row_;
  parallel::ProcessGroups& groups_;
  int64_t skipped_steps_ = 0;
  int64_t skipped_in_a_row_ = 0;
};

}  // namespace cmpi::trainer
