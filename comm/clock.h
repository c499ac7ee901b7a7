// The monotonic clock every timing in the project reads, and the one
// seconds_since. Header-only and torch-free: comm/ is the lowest layer that
// times anything (its call accounting), and everything above includes it.
#pragma once

#include <chrono>

namespace cmpi::comm {

using Clock = std::chrono::steady_clock;

// Seconds from `start` to now.
inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace cmpi::comm
