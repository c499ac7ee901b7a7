// ZeroOptimizer: the DataParallelOptimizer of ZeRO stages 0–3 (see
// data_parallel_optimizer.h for what each stage keeps and moves). One class
// for all stages: they differ only in which buffers exist when, which slice
// of the flat buffer a rank updates (ZeroLayout), and which collective
// reduces gradients. Three parts, one responsibility each:
//   - this class: the gradient buffer, its buckets and their reduction over
//     dp (overlap with backward, shard-only streaming, PowerSGD), the tied
//     table's finalize step, and the step's order;
//   - ZeroParameterStore: the parameters' values, shards and gathers;
//   - ShardedAdamW: the norm, unscale/clip and AdamW on this rank's runs,
//     with the moments, as operations on tensors wherever they live.
//
//   buffer            stage 0    stage 1    stage 2          stage 3
//   flat parameters   always     always     always           forward..step
//   parameter shard   -          -          -                always (master)
//   flat gradients    always     always     backward..step   backward..step
//   gradient shard    -          -          always           always
//   AdamW moments     whole      shard      shard            shard
//   reduce over dp    allreduce  r-scatter  r-scatter        r-scatter
//   (shard-only gradient memory, below: no flat gradients at stages 2/3)
//
// Stage 1 reduce-scatters each bucket (half an allreduce's bytes) into a
// piece-sized buffer and copies the piece back into the flat gradients,
// where its update reads it; the other pieces keep this rank's unreduced
// values, which nothing reads. Under a powersgd rule (or dp = 1) stage 1
// allreduces as stage 0 does, and the buckets of a sparse embedding that the
// dp policy sends block-sparse (compression.sparse_embedding) keep that
// allreduce, which sends only their non-zero blocks.
//
// Gradient buckets are ZeroLayout's (flat order, so shards and error-feedback
// keys stay as they were); they are launched last bucket first, which is
// reverse parameter order. With overlap and dp > 1 a GradientBucketReducer
// runs them on its thread; each parameter's AccumulateGrad node carries a
// post hook (LibTorch 1.13 has no post-accumulate-grad tensor hook; a tensor
// hook would see the gradient before accumulation) that reports the
// parameter ready once begin_last_micro_batch() has armed the reducer.
//
// Shard-only gradient memory (stages 2/3, options.shard_gradient_memory; see
// zero_shard_gradients.cpp): no flat gradient buffer. Autograd keeps each
// parameter's gradient of one backward; as each bucket's parameters are all
// accumulated, the bucket is packed into one of two bucket-sized buffers,
// the gradients it took are freed, and its reduce-scatter over zero adds
// the received piece into the gradient shard — every micro-batch.
//
// Per-layer ZeRO-3 (options.layer_schedule): the layout's buckets follow the
// schedule's units, a LayerParameterGatherer materialises units as the model
// runs them, and every zero-group collective (unit gathers and gradient
// reduce-scatters) goes through one OrderedCommQueue, threaded with overlap:
// the reducer then only decides when a bucket is ready and queues it, so
// gathers and reductions reach MPI in the same order on every rank.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "parallel/zero/data_parallel_optimizer.h"
#include "parallel/zero/gradient_bucket_reducer.h"
#include "parallel/zero/layer_parameter_gatherer.h"
#include "parallel/zero/ordered_comm_queue.h"
#include "parallel/zero/powersgd_reducer.h"
#include "parallel/zero/sharded_adamw.h"
#include "parallel/zero/zero_layout.h"
#include "parallel/zero/zero_parameter_store.h"

namespace cmpi::comm {
class Communicator;
}

namespace cmpi::parallel {

class ZeroOptimizer final : public DataParallelOptimizer {
 public:
  ZeroOptimizer(std::vector<ParamInfo> params, const DataParallelOptimizerOptions& options,
                ProcessGroups& groups);
  ~ZeroOptimizer() override;
  ZeroOptimizer(const ZeroOptimizer&) = delete;
  ZeroOptimizer& operator=(const ZeroOptimizer&) = delete;

  void zero_grad() override;
  void before_forward() override;
  void begin_last_micro_batch() override;
  double step(double lr, double max_grad_norm) override;
  bool last_step_skipped() const override { return last_step_skipped_; }
  void set_gradient_scale(double scale) override;
  const NonfiniteGradients& last_nonfinite_gradients() const override { return last_nonfinite_; }
  MemoryUsage memory() const override;
  GradReductionTimes last_reduction() const override { return last_reduction_; }
  int64_t peak_bytes() const override { return peak_bytes_; }
  int64_t peak_gathered_parameter_bytes() const override { return store_->peak_gathered_bytes(); }
  LayerGate* layer_gate() override { return store_->layer_gate(); }
  PowerSgdReducer* powersgd_reducer() override { return powersgd_.get(); }
  int zero_stage() const override { return stage_; }
  void stop_reducing_over_dp() override;
  OptimizerStateView state() const override;
  int64_t optimizer_steps() const override { return adamw_.steps(); }
  void load_state(int64_t steps, const StateSource& source) override;

  const ZeroLayout& layout() const { return layout_; }

 private:
  // Error-feedback keys: gradient buckets use their index (weight buckets:
  // ZeroParameterStore::kWeightKeyBase plus theirs).
  int dp() const { return layout_.dp(); }
  // View of the flat gradient buffer for parameter i.
  torch::Tensor grad_view(size_t i) const;
  // The reduced gradients the step reads: the shard at stages 2/3, else the flat buffer.
  StepBuffer reduced_gradients() const;
  // Allocates the flat gradient buffer if needed and points every
  // materialised parameter's .grad() at its view, folding in any gradient
  // autograd put elsewhere.
  void attach_gradients();
  void release_gradients();  // stages 2/3, after the reduce-scatter
  // Builds the reducer and, with overlap, hooks every gradient accumulator.
  void set_up_reduction();
  // The PowerSGD reducer when the dp policy's gradient allreduce rule is
  // powersgd (nullptr otherwise); throws std::invalid_argument naming the
  // rule where it cannot apply (ZeRO 2/3, buckets it matches only partly).
  std::unique_ptr<PowerSgdReducer> make_powersgd_reducer();
  // Runs bucket b's collective on `flat` (the flat gradients): on the comm
  // thread with overlap, touching no member that the main thread changes.
  void reduce_bucket(size_t b, float* flat);
  // Bucket b of a device's flat gradients through host memory: its span is
  // copied to host_grads_, reduced there as reduce_bucket does, and copied
  // back (the pinned-host staging transport of a dp group on a GPU).
  void reduce_bucket_staged(size_t b);
  // Where a bucket's reduced piece goes at stage 2: the gradient shard, or on
  // a device its host mirror (copied to the device by reduce_bucket_staged).
  float* shard_target();
  // An exact bucket's reduction (the Communicator's exact sums, same
  // collective as reduce_bucket's for the stage).
  void reduce_exactly(const ZeroBucket& bucket, float* flat);
  // Whether this rank reduces bucket b over dp (not: the tied table on the
  // stage that takes it from the other).
  bool reduced_here(const ZeroBucket& bucket) const;
  // The tied table's reduced buckets through options_.tied_gradient->share.
  void share_tied_gradient();
  // From a gradient accumulator's post hook, on the thread running backward.
  void on_gradient_accumulated(size_t param);
  // Launches what the hooks did not and waits for every bucket.
  void reduce_gradients();
  // Shard-only gradients (zero_shard_gradients.cpp). On the thread running
  // backward: packs bucket b from the parameters' gradients into a send
  // buffer, frees the gradients no other bucket of the round still needs and
  // queues the bucket's reduction.
  void stream_bucket(size_t b);
  // On the comm thread: reduces the packed bucket over zero and adds this
  // rank's piece into the gradient shard.
  void reduce_streamed_bucket(size_t b, const float* packed);
  // The parameters packed only in step(): late gradients, the tied table and,
  // transitively, whatever shares a bucket with them.
  std::vector<size_t> deferred_params() const;
  // Bytes of parameter gradients autograd holds right now (shard-only).
  int64_t held_gradient_bytes() const;
  // From a gradient accumulator's pre hook: the next backward is about to
  // add to parameter `param` (shard-only).
  void on_gradient_arriving(size_t param);
  void add_arriving_hook(torch::autograd::Node& accumulator, size_t param);
  void remove_arriving_hooks();  // the parameters may outlive this optimizer
  bool overlapping() const { return reducer_ && overlap_; }
  // The parameter holding flat index `at`.
  const std::string& param_at(size_t at) const;
  // After a non-finite norm: names what this rank saw, before and after the reduction.
  NonfiniteGradients locate_nonfinite_gradients() const;
  void note_memory();

  std::vector<ParamInfo> params_;
  std::vector<std::vector<int64_t>> shapes_;  // kept: stage 3 empties the tensors
  DataParallelOptimizerOptions options_;
  ProcessGroups& groups_;
  int stage_;
  bool per_layer_;  // stage 3 gathering per layer
  ZeroLayout layout_;
  // float32 on the parameters' device: every buffer of the flat layout.
  torch::TensorOptions float_options_;
  bool overlap_ = false;     // reduce on the comm thread during backward
  bool shard_only_ = false;  // shard-only gradient memory (see the file comment)
  // Per layer or shard-only: every zero-group collective, gathers and reductions.
  std::unique_ptr<OrderedCommQueue> queue_;
  std::unique_ptr<ZeroParameterStore> store_;
  ShardedAdamW adamw_;

  // On a device, state() hands out pointers into host copies taken here.
  mutable torch::Tensor host_values_, host_exp_avg_, host_exp_avg_sq_;
  torch::Tensor flat_grads_;  // undefined while released (stages 2/3) or before the first backward
  torch::Tensor grad_shard_;  // stages 2/3
  // How gradients are summed over dp (see the constructor).
  enum class Reduction {
    kAllreduce,       // stage 0; stage 1 under powersgd or dp = 1
    kScatterInPlace,  // stage 1: each piece reduce-scattered, copied back into the flat gradients
    kScatterToShard,  // stages 2/3: each piece reduce-scattered into the gradient shard
  };
  Reduction reduction_ = Reduction::kAllreduce;
  std::vector<float> scattered_;  // stage 1: one bucket's reduced piece
  // Stage 1, per bucket: allreduced over dp after all, block-sparse (see the constructor).
  std::vector<bool> sparse_allreduce_;
  bool last_step_skipped_ = false;
  // false after stop_reducing_over_dp (DiLoCo's warm-up is over): no bucket
  // crosses dp. One built with reduce_over_dp = false needs no flag: its
  // layout has dp() == 1, so nothing is reduced over dp anyway.
  bool reducing_over_dp_ = true;
  double gradient_scale_ = 1;  // loss scaling: the gradients' factor
  NonfiniteGradients last_nonfinite_;
  // Per bucket, from its last reduction over dp: the flat index of the first
  // non-finite value of this rank's own gradient before it, or kAllFinite.
  static constexpr size_t kAllFinite = ~size_t(0);
  std::vector<size_t> own_nonfinite_at_;
  int64_t peak_bytes_ = 0;

  struct GradientReadyHook;
  struct GradientArrivingHook;
  struct PackedBucket {
    torch::Tensor data;                 // one bucket's span
    OrderedCommQueue::Ticket sent = 0;  // its last reduction (0: none)
  };
  std::vector<PackedBucket> packed_;  // used in turn
  size_t next_packed_ = 0;
  torch::Tensor received_;  // one bucket's reduced piece (comm thread)
  std::vector<std::vector<size_t>> params_of_bucket_;
  std::vector<size_t> buckets_per_param_;  // buckets overlapping each parameter
  std::vector<size_t> unpacked_buckets_;   // per parameter, this round
  int64_t held_gradient_bytes_ = 0;        // at the last pack
  // The pre hooks, by accumulator (same order as accumulators_).
  std::vector<const torch::autograd::FunctionPreHook*> arriving_hooks_;
  float* reduce_flat_ = nullptr;   // flat_grads_ of the step being reduced
  torch::Tensor host_grads_;       // on a device (dp > 1, or a tied table): the staged buckets
  torch::Tensor host_grad_shard_;  // on a device at stage 2: the shard's host mirror
  std::vector<std::shared_ptr<torch::autograd::Node>>
      accumulators_;  // kept alive: hooks live on them
  std::vector<uintptr_t> hook_keys_;
  GradReductionTimes last_reduction_;
  std::unique_ptr<PowerSgdReducer> powersgd_;       // used by the comm thread only
  std::unique_ptr<GradientBucketReducer> reducer_;  // last: its thread stops before the rest goes
};

}  // namespace cmpi::parallel
