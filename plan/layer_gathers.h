// What per-layer ZeRO-3 moves over the zero group in one step of a pipeline
// stage: the stage's parameters cut into units (embedding, each block, head),
// each cut into buckets by parallel::ZeroLayout itself (each unit on its own,
// padded to a multiple of dp), and how often each unit is gathered, found by
// replaying parallel::Zero3GatherRules (zero3_gather_rules.h, the rules
// parallel::LayerParameterGatherer follows) over the stage's passes.
// Torch-free: sizes only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cmpi::plan {

// A run of parameters that ZeroLayout cuts into buckets of its own: `own` for
// an own-buckets parameter (the untied token embedding, reduced with role
// embedding_gradient), alone in its buckets.
struct ParameterRun {
  int64_t elements = 0;  // on this rank (its tp slice)
  bool own = false;
  bool tied = false;   // the tied table on a pipeline end (parallel::FlatParam::tied_copy)
  bool exact = false;  // replicated over tp > 1 (parallel::FlatParam::exact)
};

// A bucket in floats over the whole dp group (dp pieces each).
struct GatherBucket {
  int64_t floats = 0;
  bool own = false;   // holds an own-buckets parameter alone
  bool tied = false;  // holds the tied table alone
};

struct GatherUnit {
  int64_t elements = 0;  // parameters of the unit on this rank (its tp slice)
  std::vector<GatherBucket> buckets;
  int64_t gathers = 0;  // per step
  // The unit's gathered buffer: its buckets together (padding included).
  int64_t padded_floats() const;
};

struct StageUnits {
  std::vector<GatherUnit> units;
  std::vector<std::vector<size_t>> uses;  // units each use reads, forward order
  // Whether backward reaches the first use's input (false when it is token
  // ids: the embedding stage). Only then is the first use's after_backward
  // called (parallel/zero/layer_gate_ops.h), which releases its units.
  bool first_input_has_gradient = false;
};

// One pass of a stage over all its uses: forward with gradients (a training
// micro-batch), its backward, or forward without gradients (evaluation).
enum class StagePass { kForward, kBackward, kEval };

// `runs`, in order, as one unit: bucket sizes as parallel::ZeroLayout cuts
// them for `dp` ranks and buckets of `bucket_bytes`.
GatherUnit zero_unit(const std::vector<ParameterRun>& runs, int dp, int64_t bucket_bytes);

// Replays `passes` in order from every unit released (the optimizer's step()
// releases all), calling the gather rules as a model calls its gate: each
// unit's gathers are added to its `gathers`. Returns the most bytes of unit
// buffers alive at once (in flight included), as the gatherer counts them.
int64_t count_gathers(StageUnits& stage, const std::vector<StagePass>& passes);

}  // namespace cmpi::plan
