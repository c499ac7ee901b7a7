#include "comm/auto_deadline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace cmpi::comm {
namespace {

int64_t seconds_to_ns(double seconds) {
  return int64_t(std::min(seconds, 1e9) * 1e9);
}

std::string seconds_text(double seconds) {
  char text[32];
  if (seconds >= 10 || seconds == std::floor(seconds))
    std::snprintf(text, sizeof text, "%.0f s", seconds);
  else if (seconds >= 0.1)
    std::snprintf(text, sizeof text, "%.1f s", seconds);
  else
    std::snprintf(text, sizeof text, "%.3f s", seconds);
  return text;
}

}  // namespace

AutoDeadline::AutoDeadline(double floor_seconds) : floor_ns_(seconds_to_ns(floor_seconds)) {
  window_.reserve(kWindowSteps);
}

void AutoDeadline::set_floor(double seconds) {
  floor_ns_.store(seconds_to_ns(seconds), std::memory_order_relaxed);
}

double AutoDeadline::floor_seconds() const {
  return double(floor_ns_.load(std::memory_order_relaxed)) / 1e9;
}

void AutoDeadline::step_started() {
  // Calls that finish while the step rolls over count for one step or the
  // other; either is right (they waited at the boundary).
  const int64_t finished_step_max = step_max_ns_.exchange(0, std::memory_order_relaxed);
  if (!long_now_.load(std::memory_order_relaxed)) {
    if (window_.size() < size_t(kWindowSteps)) {
      window_.push_back(finished_step_max);
    } else {
      window_[window_next_] = finished_step_max;
      window_next_ = (window_next_ + 1) % window_.size();
    }
    window_published_ns_.store(*std::max_element(window_.begin(), window_.end()),
                               std::memory_order_relaxed);
    measured_.store(true, std::memory_order_release);
  }
  long_now_.store(next_step_long_, std::memory_order_relaxed);
  next_step_long_ = false;
}

void AutoDeadline::expect_long_work() {
  long_now_.store(true, std::memory_order_relaxed);
  next_step_long_ = true;
}

void AutoDeadline::training_ended() {
  ended_.store(true, std::memory_order_relaxed);
}

void AutoDeadline::call_finished(int64_t waited_ns) {
  int64_t seen = step_max_ns_.load(std::memory_order_relaxed);
  while (waited_ns > seen &&
         !step_max_ns_.compare_exchange_weak(seen, waited_ns, std::memory_order_relaxed)) {
  }
}

int64_t AutoDeadline::window_max_ns() const {
  return std::max(window_published_ns_.load(std::memory_order_relaxed),
                  step_max_ns_.load(std::memory_order_relaxed));
}

int64_t AutoDeadline::deadline_ns() const {
  if (ended_.load(std::memory_order_relaxed) || long_now_.load(std::memory_order_relaxed) ||
      !measured_.load(std::memory_order_acquire))
    return seconds_to_ns(kLongAllowanceSeconds);
  const double adaptive = kMultiple * double(window_max_ns());
  return std::max(floor_ns_.load(std::memory_order_relaxed),
                  int64_t(std::min(adaptive, double(seconds_to_ns(kLongAllowanceSeconds)))));
}

std::string AutoDeadline::explain() const {
  const int64_t deadline = deadline_ns();
  const std::string head = "auto: " + seconds_text(double(deadline) / 1e9);
  if (ended_.load(std::memory_order_relaxed) || long_now_.load(std::memory_order_relaxed) ||
      !measured_.load(std::memory_order_acquire))
    return head +
           ", the long allowance of start-up, the first step, checkpoint saves, evaluations "
           "and the end of training";
  const std::string slowest =
      "the slowest wait of the last " + std::to_string(kWindowSteps) + " steps";
  const std::string slowest_seconds = seconds_text(double(window_max_ns()) / 1e9);
  if (deadline == floor_ns_.load(std::memory_order_relaxed))
    return head + " = run.timeout_floor; " + slowest + ": " + slowest_seconds;
  char multiple[16];
  std::snprintf(multiple, sizeof multiple, "%g", kMultiple);
  return head + " = " + multiple + " x " + slowest + ", " + slowest_seconds;
}

}  // namespace cmpi::comm
