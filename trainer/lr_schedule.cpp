#include "trainer/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace cmpi::trainer {

double LrSchedule::at(int64_t step) const {
  if (step < warmup_steps) return peak * double(step + 1) / double(warmup_steps);
  const int64_t decay_steps = std::max<int64_t>(1, total_steps - warmup_steps - 1);
  const double progress = std::min(1.0, double(step - warmup_steps) / double(decay_steps));
  return min_lr + 0.5 * (peak - min_lr) * (1.0 + std::cos(M_PI * progress));
}

}  // namespace cmpi::trainer
