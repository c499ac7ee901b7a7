// ShardedAdamW: ZeRO's optimizer step, apart from how gradients are reduced
// (ZeroOptimizer) and where the parameters are kept (ZeroParameterStore).
// It owns the AdamW moments of the runs this rank updates (the whole flat
// layout at stage 0, its shard at 1–3) and the step count, and it does the
// step's three passes on reduced gradients:
//   1. the global gradient norm: squares summed over what this rank holds
//      reduced, tensor-parallel and replicated parameters apart (tp counts a
//      replicated one once), then over zero (when only the own pieces were
//      reduced), tp and pp;
//   2. one multiply that unscales (loss scaling) and clips;
//   3. AdamW on this rank's runs.
// Buffers arrive as tensors with the layout their runs are addressed in
// (StepBuffer), so the same step works on the flat buffers of stages 0/1 and
// the shards of 2/3, and on host or device memory: on CPU float32 the passes
// are the fused host loops (adamw.h: bit for bit the documented formula), on
// any other tensor LibTorch's multi-tensor (_foreach_) operations, a fixed
// number of kernel launches per step whatever the number of runs.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "parallel/zero/adamw.h"
#include "parallel/zero/zero_layout.h"

namespace cmpi::parallel {

class ProcessGroups;

// Where a run (ZeroSegment) sits in a buffer: at its flat offset (a buffer
// spanning the whole flat layout) or at its shard offset (this rank's shard).
enum class RunAddress { kFlat, kShard };

struct StepBuffer {
  torch::Tensor data;  // one dimension, float32
  RunAddress address = RunAddress::kFlat;
};

class ShardedAdamW {
 public:
  // kAuto: the host loops for CPU float32 buffers, tensor operations for the
  // rest. The other two force one form (tests compare them on the CPU).
  enum class Kernels { kAuto, kHostLoops, kTensorOps };

  // `runs`: what this rank updates; their shard offsets place them in the
  // moments, `state_size` elements each, allocated with `state_options`.
  ShardedAdamW(const AdamWOptions& options, const ZeroLayout& layout, std::vector<ZeroSegment> runs,
               size_t state_size, const torch::TensorOptions& state_options,
               Kernels kernels = Kernels::kAuto);

  // Step 1: the global norm of `grads` over `runs`; their squares are summed
  // over the zero group first when `sum_over_zero` (each rank holds only its
  // pieces reduced).
  double global_norm(const StepBuffer& grads, const std::vector<ZeroSegment>& runs,
                     bool sum_over_zero, ProcessGroups& groups) const;
  // Step 2: every element of `grads` times `factor`.
  void scale(torch::Tensor& grads, float factor) const;
  // Step 3: one AdamW step at learning rate `lr` on this rank's runs; the step
  // count advances first (the first step is step 1).
  void update(double lr, const StepBuffer& params, const StepBuffer& grads);

  const std::vector<ZeroSegment>& runs() const { return runs_; }
  int64_t steps() const { return steps_; }
  void set_steps(int64_t steps) { steps_ = steps; }
  // The moments, laid out by the runs' shard offsets (checkpoints read and
  // write them in place).
  const torch::Tensor& exp_avg() const { return exp_avg_; }
  const torch::Tensor& exp_avg_sq() const { return exp_avg_sq_; }
  int64_t state_bytes() const { return 2 * exp_avg_.numel() * int64_t(sizeof(float)); }

 private:
  bool host_loops(const torch::Tensor& buffer) const;
  // A run's view of `buffer`, addressed as `address` says.
  static torch::Tensor run_view(const torch::Tensor& buffer, RunAddress address,
                                const ZeroSegment& run);

  AdamWOptions options_;
  const ZeroLayout& layout_;
  std::vector<ZeroSegment> runs_;
  Kernels kernels_;
  torch::Tensor exp_avg_, exp_avg_sq_;
  int64_t steps_ = 0;
};

}  // namespace cmpi::parallel
