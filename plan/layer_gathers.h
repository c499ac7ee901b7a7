// What per-layer ZeRO-3 moves over the zero group in one step of a pipeline
// stage, exactly as the trainer does it: the stage's parameters cut into
// units (embedding, each block, head) laid out as parallel::ZeroLayout lays
// them out (each unit in its own buckets, padded to a multiple of dp), and
// how often each unit is gathered, found by running the rules of
// parallel::LayerParameterGatherer (layer_parameter_gatherer.h) over the
// stage's pipeline actions: gather a use's units before it runs (forward and
// backward) and prefetch the next use's, release a use's units after it
// unless the next use reads them, keep the last use's for its backward.
// Torch-free: sizes only.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cmpi::plan {

struct GatherUnit {
  int64_t elements = 0;  // parameters of the unit on this rank (its tp slice)
  // Bucket sizes in floats over the whole dp group (dp pieces each), as
  // ZeroLayout cuts them.
  std::vector<int64_t> bucket_floats;
  // The first own_buckets of bucket_floats hold an own-buckets parameter
  // alone (an untied token embedding, reduced with role embedding_gradient).
  size_t own_buckets = 0;
  int64_t gathers = 0;  // per step
};

struct StageUnits {
  std::vector<GatherUnit> units;
  std::vector<std::vector<size_t>> uses;  // units each use reads, forward order
  // Whether backward reaches the first use's input (false when it is token
  // ids: the embedding stage), which releases the first use's units.
  bool first_input_has_gradient = false;
};

// Cuts `elements` into ZeroLayout's buckets: pieces of min(max_piece,
// ceil(remaining / dp)) floats, dp pieces a bucket.
std::vector<int64_t> zero_buckets(int64_t elements, int dp, int64_t bucket_bytes);

// Counts every unit's gathers over one step: `actions` are the stage's
// pipeline actions ((forward?, micro-batch) in order).
void count_gathers(StageUnits& stage, const std::vector<bool>& forward_actions);

}  // namespace cmpi::plan
