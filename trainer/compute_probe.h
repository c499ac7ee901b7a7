// Compute probe: how fast this machine runs the configured GPT's kernels, for
// the planner's compute model when the user gives no --plan-flops.
//
// It builds a one-layer model of the config's shape on one process
// (embedding, one block, final LayerNorm and tied head; no tensor or pipeline
// split, no communication), times forward + backward of one micro-batch
// (the best of 3 to 11 after a warm-up, so a busy machine's slow runs are
// left out) and divides the planner's FLOP count for
// that model (plan::forward_flops_per_token x 3 x tokens) by the time. So
// what the small GEMMs, attention, LayerNorm, GELU and autograd's overhead
// achieve on this core is measured, not assumed from a large GEMM's rate.
// Shapes too large to time in about a second are shrunk first (hidden, vocab,
// sequence and micro-batch capped, head size kept) and the report says so.
#pragma once

#include <string>

#include "config/config.h"

namespace cmpi::trainer {

struct ComputeProbe {
  double flops_per_second = 0;  // achieved, by the planner's FLOP count
  double seconds = 0;           // one forward + backward of the probe model
  std::string shape;            // "hidden 256, seq 128, micro-batch 4, vocab 1024"
  bool shrunk = false;          // the config's shape was capped to time it
};

// Runs on this process alone (MPI must be initialised); uses
// training.threads intra-op threads.
ComputeProbe probe_compute(const config::Config& config);

}  // namespace cmpi::trainer
