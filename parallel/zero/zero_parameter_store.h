// ZeroParameterStore: where ZeRO keeps the parameters' values, apart from
// how gradients are reduced (ZeroOptimizer) and how the step updates them
// (ShardedAdamW). It owns
//   - the flat parameter buffer whose views the model's parameters are
//     (stages 0–2 always; stage 3 between its gather before forward and the
//     release in step, and never when gathering per layer);
//   - stage 3's parameter shard, the master copy of this rank's pieces;
//   - their gathers over zero: stage 3's whole model before forward, stages
//     1/2's updated pieces after the step (through a staging copy of the own
//     piece, so that a lossy weight rule never perturbs the master values),
//     and, per layer, a LayerParameterGatherer that materialises units as the
//     model runs them, on the OrderedCommQueue the gradient reduction shares;
//   - the releases that turn the model's parameters into stand-ins.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "parallel/zero/data_parallel_optimizer.h"
#include "parallel/zero/layer_parameter_gatherer.h"
#include "parallel/zero/ordered_comm_queue.h"
#include "parallel/zero/sharded_adamw.h"
#include "parallel/zero/zero_layout.h"

namespace cmpi::comm {
class Communicator;
}

namespace cmpi::parallel {

class ZeroParameterStore {
 public:
  // Error-feedback keys of weight gathers: this offset plus the bucket index,
  // so a lossy rule never mixes their residuals with the gradient buckets'.
  static constexpr uint64_t kWeightKeyBase = uint64_t(1) << 32;

  // Takes over the parameters' storage (see the file comment for what each
  // stage keeps). `params`, `shapes`, `layout` and `zero` outlive this;
  // `queue` (per-layer stage 3 only) too. `on_memory_change` runs after
  // every allocation (the optimizer notes its memory peak). `float_options`:
  // float32 on the parameters' device, where the flat buffer and shard live.
  ZeroParameterStore(std::vector<ParamInfo>& params,
                     const std::vector<std::vector<int64_t>>& shapes, const ZeroLayout& layout,
                     const DataParallelOptimizerOptions& options, comm::Communicator& zero,
                     OrderedCommQueue* queue, std::function<void()> on_memory_change,
                     const torch::TensorOptions& float_options);
  ~ZeroParameterStore();
  ZeroParameterStore(const ZeroParameterStore&) = delete;
  ZeroParameterStore& operator=(const ZeroParameterStore&) = delete;

  // Whether the flat buffer (and so the model's parameter views) exists now.
  bool materialised() const { return flat_.defined(); }
  bool per_layer() const { return gatherer_ != nullptr; }
  // Parameter i's view of the flat buffer (materialised only).
  torch::Tensor view(size_t i) const;

  // Stage 3, gathering per model: the shard's pieces of every bucket into a
  // new flat buffer, the model's parameters its views.
  void gather();
  // Stage 3: the parameters become empty (per layer: every unit released).
  void release();
  // Stages 1/2 after the update: every bucket's updated pieces from their owners.
  void allgather_updated();
  // What the step updates: the shard at stage 3, else the flat buffer.
  StepBuffer values() const;

  // Checkpoint state: the values of `run` (in the shard or the flat buffer),
  // and filling every value from `source` (the flat buffer when
  // materialised, then stage 3's shard).
  const float* values_of(const ZeroSegment& run) const;
  void load(const StateSource& source, const std::vector<ZeroSegment>& runs);

  LayerGate* layer_gate() { return gatherer_.get(); }
  int64_t parameter_bytes() const;  // flat buffer, shard and live per-layer units
  int64_t buffer_bytes() const;     // the staging copy
  int64_t peak_gathered_bytes() const;
  // Leaks the buffers a zero-group collective still in flight may write
  // (error paths only, before the job ends).
  void abandon_in_flight();

 private:
  int dp() const { return layout_.dp(); }
  void fill_shard_per_layer();      // from options.initial_values or the parameters
  void copy_flat_to_shard();        // stage 3: the own pieces of the flat buffer
  void allgather_updated_staged();  // allgather_updated through host memory (a device)

  std::vector<ParamInfo>& params_;
  const std::vector<std::vector<int64_t>>& shapes_;
  const ZeroLayout& layout_;
  const DataParallelOptimizerOptions& options_;
  comm::Communicator& zero_;
  int stage_;
  std::function<void()> on_memory_change_;
  torch::TensorOptions float_options_;  // float32 on the parameters' device
  torch::Tensor flat_;                  // undefined while released (stage 3)
  torch::Tensor shard_;                 // stage 3
  std::vector<float> staging_;          // stages 1/2: this rank's piece during an allgather
  torch::Tensor host_span_;             // stages 1-2 on a device: one bucket's gathered span
  std::vector<size_t> counts_;          // per-rank counts of one bucket's gather
  int64_t peak_gathered_bytes_ = 0;     // whole-model gathers (per layer: the gatherer's)
  std::unique_ptr<LayerParameterGatherer> gatherer_;
};

}  // namespace cmpi::parallel
