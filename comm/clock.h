// Wall-clock intervals on the monotonic clock, for the timings the runtime
// reports (codec probes, comm-queue waits, step times, checkpoint saves).
//
// It sits in comm/ because comm/ is the lowest layer that times anything and
// every layer that does (comm's adaptive policy, parallel's comm queue, the
// planner's codec probe, the trainer, the checkpoint manager) already
// depends on it; compress/ and io/ below it have no use for a clock.
// Header-only and torch-free.
#pragma once

#include <chrono>

namespace cmpi::comm {

using Clock = std::chrono::steady_clock;

// Seconds from `start` to now.
inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace cmpi::comm
