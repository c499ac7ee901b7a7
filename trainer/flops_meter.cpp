#include "trainer/flops_meter.h"

#include <cstdio>

namespace cmpi::trainer {

FlopsMeter::FlopsMeter(plan::TokenFlops per_token, double tokens_per_step, int ranks, double peak)
    : per_token_(per_token), tokens_per_step_(tokens_per_step), ranks_(ranks), peak_(peak) {}

Utilization FlopsMeter::over(double steps, double seconds) const {
  Utilization u;
  if (!counts() || !(seconds > 0) || ranks_ < 1) return u;
  const double tokens_per_rank = tokens_per_step_ * steps / double(ranks_);
  const double model = per_token_.model_training() * tokens_per_rank / seconds;
  const double hardware = per_token_.hardware_training() * tokens_per_rank / seconds;
  u.tflops_per_rank = model / 1e12;
  if (peak_ > 0) {
    u.mfu = model / peak_;
    u.hfu = hardware / peak_;
  }
  return u;
}

std::string human_flops(double flops_per_second) {
  const char* units[] = {"FLOP/s", "kFLOP/s", "MFLOP/s", "GFLOP/s", "TFLOP/s", "PFLOP/s"};
  int unit = 0;
  double value = flops_per_second;
  while (value >= 1000 && unit < 5) {
    value /= 1000;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g %s", value, units[unit]);
  return buf;
}

}  // namespace cmpi::trainer
