// Size limits of a config, checked right after loading, before anything is
// allocated. Two kinds:
//   * per-key bounds far beyond any real model (model.hidden <= 2^20, ...),
//     so that every size product below stays exact in 64-bit arithmetic;
//   * products the run will allocate (the largest single tensor, the logits
//     and attention scores of one micro-batch), computed in long double and
//     refused when they exceed what any machine holds, naming the keys that
//     multiply to them.
// Whether a rank's share fits the memory of the machine it runs on is the
// pre-flight check in memory_preflight.h, which needs the world size.
#pragma once

#include "config/config.h"

namespace cmpi::config {

// Throws ConfigError "<where>: <key>: ..." for the first limit exceeded.
void check_size_limits(const Config& config);

}  // namespace cmpi::config
