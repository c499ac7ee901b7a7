// AdamW over flat float spans: the one optimizer update of the project, the
// host form of ShardedAdamW's step (sharded_adamw.h) at every ZeRO stage
// (replicated state for stage 0, a 1/dp slice for 1–3).
//
// Works as torch::optim::AdamW does (decoupled weight decay, bias-corrected
// moments, eps added after the bias correction of the second moment):
//   p ← p · (1 − lr·wd)
//   m ← β1·m + (1 − β1)·g          v ← β2·v + (1 − β2)·g²
//   p ← p − lr/(1 − β1^t) · m / (√v / √(1 − β2^t) + eps)
// The per-step scalars are computed once in double and applied in float,
// element by element in the same order as LibTorch's tensor ops, so the two
// agree to float rounding. No amsgrad, no maximize.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cmpi::parallel {

struct AdamWOptions {
  double lr = 1e-3;  // the default; each step may pass its own
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 1e-2;  // for parameters that take decay at all
};

// Throws std::invalid_argument naming the field for a value torch would reject
// (lr, eps or weight_decay < 0, betas outside [0, 1)).
void validate(const AdamWOptions& options);

// The scalars of step `step` (1-based) at learning rate `lr`.
struct AdamWStep {
  AdamWStep(const AdamWOptions& options, double lr, int64_t step);

  float beta1, one_minus_beta1;
  float beta2, one_minus_beta2;
  float eps;
  float step_size;               // lr / (1 − β1^t)
  double bias_correction2_sqrt;  // √(1 − β2^t)
  float decay_factor;            // 1 − lr·wd, for parameters with weight decay
};

// Updates n elements in place. `decay` says whether weight decay applies.
void adamw_update(const AdamWStep& step, bool decay, float* param, const float* grad,
                  float* exp_avg, float* exp_avg_sq, size_t n);

}  // namespace cmpi::parallel
