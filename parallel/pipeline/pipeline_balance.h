// Pipeline balance: how many consecutive layers each pipeline stage gets so
// that the costliest stage costs as little as possible, when a stage's cost
// depends on more than its layer count (the first stage also holds the
// embedding, the last the head, and under 1F1B stage s keeps pp - s
// micro-batches of activations).
//
// Exact min-max by dynamic programming over (stages used, layers used), with
// each stage's cost tabulated once for every layer count: O(P·L) cost calls
// and O(P·L²) steps. Among the partitions reaching that smallest maximum it
// picks the one with the smallest sum of squared stage costs (a second pass
// of the same recursion, with every stage capped at the maximum), so stages
// that do not decide the maximum are still spread evenly. Ties left after
// that go to the partition whose earlier stages hold fewer layers. Pure and
// deterministic, so every rank derives the same partition.
//
// Torch-free: plain numbers, used by the memory estimate (parallel.
// pipeline_balance: auto) and through it by the trainer and the planner.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace cmpi::parallel {

// What stage `stage` (0-based) costs holding `layers` layers (>= 1).
using StageCost = std::function<long double(int64_t stage, int64_t layers)>;

// Layer counts per stage (each >= 1, summing to `layers`) minimising the
// largest stage cost. Throws std::invalid_argument naming parallel.pipeline
// when stages < 1 or layers < stages.
std::vector<int64_t> min_max_stage_layers(int64_t layers, int64_t stages, const StageCost& cost);

}  // namespace cmpi::parallel
