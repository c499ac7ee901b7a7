// Zero3GatherRules: per-layer ZeRO-3's rules for when a unit of parameters
// (layer_schedule.h: the embedding, each block, the head) is gathered,
// prefetched and released around the uses of one pass. Torch-free: the rules
// name units; what a unit is (a buffer and an allgather per bucket in
// LayerParameterGatherer, a size in the planner's replay, plan/layer_gathers.h)
// is the caller's. One set of rules for both, so the step the planner
// projects is the step the trainer runs.
//
// Around use u of n, in the order a model calls its gate:
//   before_forward(u):  gather u's units (waiting for their prefetch);
//                       prefetch u+1's.
//   after_forward(u):   release u's units that u+1 does not read. After the
//                       last use: with gradients recorded keep them (their
//                       backward comes next); without (evaluation) release
//                       them, nothing comes back for them.
//   before_backward(u): gather u's units again; prefetch u-1's.
//   after_backward(u):  release u's units that u-1 does not read (all of
//                       them at u = 0).
// So at most the current and the next use's units are alive: about two
// layers (plus the tied table with the head).
#pragma once

#include <cstddef>
#include <vector>

namespace cmpi::parallel {

// What the rules act on. gather(u) returns with unit u gathered (a prefetch
// in flight is waited for); prefetch(u) starts gathering u unless it is
// already gathered or in flight; release(u) drops u if it is held. Each is a
// no-op where the unit already is in that state.
class UnitGatherer {
 public:
  virtual void gather(size_t unit) = 0;
  virtual void prefetch(size_t unit) = 0;
  virtual void release(size_t unit) = 0;

 protected:
  ~UnitGatherer() = default;
};

class Zero3GatherRules {
 public:
  // uses[u]: the units use u reads, forward order. Throws
  // std::invalid_argument naming the use if one reads a unit >= unit_count.
  Zero3GatherRules(std::vector<std::vector<size_t>> uses, size_t unit_count);

  void before_forward(size_t use, UnitGatherer& units) const;
  // recording_gradients: whether a backward of this forward will follow
  // (false in evaluation).
  void after_forward(size_t use, bool recording_gradients, UnitGatherer& units) const;
  void before_backward(size_t use, UnitGatherer& units) const;
  void after_backward(size_t use, UnitGatherer& units) const;

  size_t use_count() const { return uses_.size(); }
  // Throws std::logic_error for a use past the schedule (a model that runs
  // more uses than its schedule names).
  const std::vector<size_t>& units_of(size_t use) const;

 private:
  // Releases the units of `use` that `keep` (if any) does not read.
  void release_except(size_t use, const std::vector<size_t>* keep, UnitGatherer& units) const;

  std::vector<std::vector<size_t>> uses_;
};

}  // namespace cmpi::parallel
