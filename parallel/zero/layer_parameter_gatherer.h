// LayerParameterGatherer: per-layer ZeRO-3's LayerGate. It materialises a
// unit's parameters (ZeroLayout units: embedding, each block, head) from the
// rank's parameter shards just before a use needs them and frees them after,
// in forward and again in backward, prefetching the next use's units while
// the current use computes.
//
// Works as follows. A unit is released (its parameters are unmaterialised
// stand-ins), in flight (a buffer of the unit's padded size is allocated and
// one allgather per bucket of the unit, role weight, is queued on the
// OrderedCommQueue) or gathered (the parameters are views of the buffer).
// When to gather, prefetch and release is Zero3GatherRules'
// (zero3_gather_rules.h, shared with the planner); evaluation is forward with
// gradients off (torch::GradMode), which releases the last use's units too.
// The parameters' gradients are not touched: they stay views of the
// optimizer's flat gradient buffer, so AccumulateGrad adds into it whether or
// not the unit is gathered.
// Gathered bytes (unit buffers alive, in flight included) are counted; the
// peak is what a test asserts and the trainer reports.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "parallel/param_info.h"
#include "parallel/zero/layer_schedule.h"
#include "parallel/zero/ordered_comm_queue.h"
#include "parallel/zero/zero3_gather_rules.h"
#include "parallel/zero/zero_layout.h"

namespace cmpi::comm {
class Communicator;
}

namespace cmpi::parallel {

class LayerParameterGatherer final : public LayerGate, private UnitGatherer {
 public:
  // `params`, `shapes`, `layout`, `shard` (this rank's parameter shard,
  // layout.shard_size() floats), `queue` outlive this; `zero` is the group
  // the shards are spread over (unused with dp = 1). Error-feedback keys of
  // bucket b's gather: weight_key_base + b. `on_gather` runs after every
  // allocation (the optimizer notes its memory peak).
  LayerParameterGatherer(std::vector<ParamInfo>& params,
                         const std::vector<std::vector<int64_t>>& shapes, const ZeroLayout& layout,
                         std::vector<std::vector<size_t>> uses, const float* shard,
                         comm::Communicator& zero, OrderedCommQueue& queue,
                         uint64_t weight_key_base, std::function<void()> on_gather);
  ~LayerParameterGatherer() override;

  void before_forward(size_t use) override;
  void after_forward(size_t use) override;
  void before_backward(size_t use) override;
  void after_backward(size_t use) override;

  // Every unit back to stand-ins (waits for gathers in flight).
  void release_all();
  // Bytes of unit buffers alive now, and the most at once since construction.
  int64_t live_bytes() const { return live_bytes_; }
  int64_t peak_bytes() const { return peak_bytes_; }

 private:
  enum class State { kReleased, kInFlight, kGathered };
  struct Unit {
    State state = State::kReleased;
    torch::Tensor buffer;
    OrderedCommQueue::Ticket ticket = 0;
  };
  // UnitGatherer, what the rules call: released -> in flight (prefetch),
  // -> gathered (gather), -> released (release).
  void gather(size_t unit) override;
  void prefetch(size_t unit) override;
  void release(size_t unit) override;

  std::vector<ParamInfo>& params_;
  const std::vector<std::vector<int64_t>>& shapes_;
  const ZeroLayout& layout_;
  Zero3GatherRules rules_;
  const float* shard_;
  comm::Communicator& zero_;
  OrderedCommQueue& queue_;
  uint64_t weight_key_base_;
  std::function<void()> on_gather_;
  std::vector<Unit> units_;
  int64_t live_bytes_ = 0;
  int64_t peak_bytes_ = 0;
};

}  // namespace cmpi::parallel
