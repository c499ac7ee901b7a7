// FlopsMeter: what a step's time means in FLOPs. From the model's FLOPs per
// token (plan/model_flops.h, the planner's formula) and the tokens of a
// global batch it gives, per rank (the step's FLOPs spread over all ranks),
// the model TFLOP/s, MFU (model FLOPs: 3 x forward, over the peak) and HFU
// (hardware FLOPs: recomputation added). The peak is FLOP/s per rank
// (plan/peak_flops.h: measured, a device's datasheet or the user's number).
#pragma once

#include <string>

#include "plan/model_flops.h"

namespace cmpi::trainer {

struct Utilization {
  double tflops_per_rank = -1;  // model FLOPs; negative: not counted
  double mfu = -1;              // fraction of the peak; negative: no count or no peak
  double hfu = -1;              // the same with recomputation counted
};

class FlopsMeter {
 public:
  FlopsMeter() = default;
  // tokens_per_step: a global batch's tokens; ranks: the world size; peak:
  // FLOP/s per rank (0: unknown, then only TFLOP/s is reported).
  FlopsMeter(plan::TokenFlops per_token, double tokens_per_step, int ranks, double peak);

  // Whether the model has a FLOP count (a GPT; not a ResNet).
  bool counts() const { return per_token_.forward > 0; }
  double peak() const { return peak_; }
  const plan::TokenFlops& per_token() const { return per_token_; }
  // `steps` global batches in `seconds`.
  Utilization over(double steps, double seconds) const;

 private:
  plan::TokenFlops per_token_;
  double tokens_per_step_ = 0;
  int ranks_ = 1;
  double peak_ = 0;
};

// "12.3 GFLOP/s" or "312 TFLOP/s": FLOP/s for people, in the unit that keeps
// the number between 1 and 1000.
std::string human_flops(double flops_per_second);

}  // namespace cmpi::trainer
