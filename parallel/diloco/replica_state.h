// A DiLoCo replica's own optimizer state in a checkpoint's rank state.
//
// Between syncs every dp replica holds its own weights and AdamW moments
// (diloco_sync.h), but a checkpoint's optimizer entries hold one copy of the
// state replicated over dp: dp rank 0's (OptimizerStateView::
// replicated_over_dp). So that a run resumed mid-interval continues bit for
// bit, every other dp rank also writes its own state (weights, both moments,
// AdamW's step count) into its rank state, which the same rank of the same
// layout puts back after the optimizer entries were loaded. Under another
// layout the rank state is dropped: every replica then continues from dp
// rank 0's state.
#pragma once

#include <string>

namespace cmpi::parallel {

class DataParallelOptimizer;

// This rank's whole optimizer state as bytes. Call between steps.
std::string save_replica_state(const DataParallelOptimizer& optimizer);
// Puts it back; throws std::runtime_error (naming "diloco/replica") for bytes
// that do not fit this optimizer's runs.
void load_replica_state(DataParallelOptimizer& optimizer, const std::string& bytes);

}  // namespace cmpi::parallel
