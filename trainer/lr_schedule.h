// Learning rate at a step: linear warmup from 0 to peak over warmup_steps,
// then cosine decay from peak to min_lr at the last step.
#pragma once

#include <cstdint>

namespace cmpi::trainer {

struct LrSchedule {
  double peak = 1e-3;
  double min_lr = 1e-4;
  int64_t warmup_steps = 0;
  int64_t total_steps = 1;

  double at(int64_t step) const;  // step counts from 0
};

}  // namespace cmpi::trainer
