#include "trainer/eta.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace cmpi::trainer {

void EtaClock::step_took(double seconds) {
  recent_.push_back(seconds);
  recent_sum_ += seconds;
  if (recent_.size() > window_) {
    recent_sum_ -= recent_.front();
    recent_.pop_front();
  }
}

double EtaClock::remaining_seconds(int64_t steps_left, int64_t evaluations_left) const {
  if (recent_.empty()) return -1;
  const double mean = recent_sum_ / double(recent_.size());
  return double(steps_left) * mean + double(evaluations_left) * evaluation_seconds_;
}

int64_t evaluations_after(int64_t done, int64_t total, int64_t every) {
  if (every <= 0 || done >= total) return 0;
  // Multiples of `every` in (done, total], and the last step if it is not one.
  return total / every - done / every + (total % every != 0 ? 1 : 0);
}

std::string format_duration(double seconds) {
  const int64_t s = std::llround(std::max(0.0, seconds));
  char buf[32];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%llds", (long long)s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
  else if (s < 86400)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", (long long)(s / 3600),
                  (long long)(s % 3600 / 60));
  else
    std::snprintf(buf, sizeof buf, "%lldd%02lldh", (long long)(s / 86400),
                  (long long)(s % 86400 / 3600));
  return buf;
}

}  // namespace cmpi::trainer
