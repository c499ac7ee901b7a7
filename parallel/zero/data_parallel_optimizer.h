// DataParallelOptimizer: everything a training step does with the gradients
// backward produces — reduction over the data-parallel group (overlapped
// with the last backward), clipping by the global
// gradient norm, the AdamW update and making the updated weights available
// again — behind one interface, for ZeRO stages 0 to 3.
//
// The trainer calls, per step:
//   zero_grad(); before_forward();
//   { forward; [begin_last_micro_batch() before the last backward;] backward } per micro-batch;
//   step(lr, clip);
// Gradients accumulate over the micro-batches in the optimizer's own flat
// buffer (each parameter's .grad() is a view of it; not with
// shard_gradient_memory, stage 2 below), so each gradient bucket
// is reduced once per step, when its gradients are final: with
// overlap_grad_reduce, as soon as the last micro-batch's backward has
// accumulated every gradient in it (autograd hooks on the parameters'
// AccumulateGrad nodes), on a communication thread while backward goes on,
// buckets in reverse parameter order (see gradient_bucket_reducer.h); step()
// launches what is left (unused parameters, ParamInfo::late_gradient) and
// waits.
// Without overlap, or without begin_last_micro_batch(), step() reduces every
// bucket. Both orders give bit-identical results.
//
//   stage 0  replicated: bucketed allreduce of gradients over dp (role
//            gradient; embedding_gradient for the buckets of parameters
//            flagged sparse_gradient), full optimizer state on every rank.
//   stage 1  optimizer state sharded over dp: each gradient bucket is
//            reduce-scattered over the zero group (role gradient), so a rank
//            gets the sum of only the 1/dp it updates — half an allreduce's
//            bytes — written back into the flat gradient buffer; each rank
//            updates its 1/dp of the flat parameters, then an allgather over
//            the zero group (role weight) brings the rest back. (Under a
//            powersgd rule the buckets are allreduced over dp instead, and
//            so are a sparse embedding's own buckets that the dp policy
//            sends through the block-sparse allreduce.)
//   stage 2  + gradients sharded: reduce-scatter over the zero group (role
//            gradient); after the step a rank keeps only its gradient shard.
//            The full-size gradient buffer exists from the first backward of
//            a step until its reduce-scatter (it is where micro-batches
//            accumulate), so the PEAK gradient memory is not reduced, only
//            what a rank holds between steps.
//            With shard_gradient_memory (parallel.zero_gradient_memory:
//            shard) there is no flat gradient buffer: each micro-batch's
//            buckets are reduce-scattered as its backward finishes them and
//            added into the shard, so the peak is the shard plus about three
//            buckets (two packed, one accumulating in autograd's tensors), at
//            M times the gradient traffic for M micro-batches per step. The
//            sums are reassociated (per micro-batch, then over them), so the
//            result is not bit-identical to full_buffer, only close.
//   stage 3  + parameters sharded: between steps a rank keeps only its
//            parameter shard; the model's parameters are stand-ins then.
//            Two ways to gather them (role weight, over zero):
//            - per layer (a layer_schedule given; the trainer's default,
//              parallel.zero3_gather: layer): the model calls layer_gate()
//              around every layer, which gathers the layer's parameters just
//              before its forward, frees them after, gathers them again for
//              its backward and frees them once its input gradient is
//              computed, prefetching the next layer's gather meanwhile (see
//              layer_parameter_gatherer.h). Peak parameter memory: the shard
//              plus about two layers. Buckets never straddle layers, so each
//              layer's gradient bucket is reduce-scattered as soon as the last
//              backward has accumulated it. With initial_values the model's
//              tensors may be stand-ins from the start: the optimizer
//              generates its shard and nothing builds a whole tensor.
//            - once per step (no schedule; zero3_gather: model):
//              before_forward() allgathers the whole stage's parameters, which
//              stay until step() frees them, so the peak holds the whole
//              model's parameters during forward and backward.
//            Either way gradients and optimizer state are as in stage 2.
//
// With tensor parallelism each tp rank runs its own instance over its own
// shards (its dp group holds the same shards). With pipeline parallelism each
// stage shards its own parameters over its own dp group; because gradients
// accumulate over all micro-batches before the reduce-scatter (or, shard-only,
// every stage reduce-scatters each of its micro-batches' buckets in its own
// deterministic backward order) and stage 3
// gathers once per step, stages 1–3 need nothing more under PP than the
// micro-batches of a step running between before_forward() and step() (per
// layer, each stage gathers its own layers as its pipeline work runs them).
//
// The global gradient norm is the norm of the whole model's gradient:
//   norm² = Σ_pp ( Σ_tp Σ tensor-parallel ‖g‖² + Σ replicated ‖g‖² )
// computed from the reduced gradient (its shards, summed over dp, under
// stages 2/3), with parameters flagged counted_on_other_stage (the tied head
// copy on the last pipeline stage) left out. Scalar allreduces (role other)
// over dp, tp and pp as needed.
//
// A non-finite global norm (NaN or infinity anywhere in the reduced
// gradient, or a sum of squares that overflowed) skips the update: weights,
// AdamW moments and AdamW's step count stay as they were, on every rank,
// because the norm is global; the buckets are still reduced (the collectives
// match) and stage 3 still frees its gathered parameters. Applying such an
// update would turn every weight it touches into NaN, so this holds whatever
// the trainer then decides. To say where the NaN came from, each gradient
// bucket is scanned for non-finite values before its reduction over dp (one
// read pass, on the comm thread with overlap).
//
// PowerSGD: when the dp group's policy sends the gradient allreduce through a
// powersgd rule (stages 0/1 only, stage 1 then allreducing; stages 2/3 refuse
// it naming the rule), each
// bucket is reduced by parallel/zero/powersgd_reducer.h instead: a tensor belongs
// to the bucket holding its first element, matrices are summed as rank-r
// approximations with per-rank error feedback, other tensors raw.
//
// Replicas stay equal. A parameter several ranks outside one dp group hold
// must get the same update on all of them, so its reduced gradient must be
// the same bits on all of them, whatever the dp policy (lossy codecs, error
// feedback, stochastic quantizers, preset auto's per-group choices):
//   - replicated over tp (every parameter not tensor_parallel when tp > 1:
//     LayerNorms, row-parallel biases, the position table): each tp rank's
//     own dp group reduces its copy. Their gradients go into buckets of
//     their own (parallel/zero/zero_layout.h: FlatParam::exact), reduced by the
//     Communicator's exact sums, never through the policy: lossless, in an
//     order fixed by the group's size, so equal inputs on the tp ranks (the
//     tp all-reduces leave every tp rank the same bits) give equal outputs.
//     They are small (O(hidden) per layer, against O(hidden²) sharded).
//   - the tied table on the pipeline's first and last stage (tied_gradient
//     below): only the first stage reduces it over dp (lossy as any
//     gradient), and shares its result with the last, which reduces nothing.
// The global norm then agrees too, so every copy is clipped by the same
// factor. docs/policy.md, "Replicated parameters".
//
// ZeRO traffic (stages 1–3: parameter allgather, gradient reduce-scatter)
// goes through groups.zero(); the stage 0 (and powersgd) gradient allreduce through
// groups.dp(). All optimizer state is float32: the parameters are the master
// weights also under mixed precision (training.precision bf16/fp16), where
// the model rounds them to its compute dtype on every use and backward
// hands float32 weight gradients to the flat buffer, so micro-batches
// accumulate and buckets are reduced over dp in float32.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "parallel/param_info.h"
#include "parallel/zero/adamw.h"
#include "parallel/zero/layer_schedule.h"

namespace cmpi::parallel {

class ProcessGroups;
class PowerSgdReducer;

// Bytes held by this rank right now.
struct MemoryUsage {
  int64_t parameter_bytes = 0;  // flat parameters and/or the parameter shard
  int64_t gradient_bytes = 0;   // flat gradients and/or the gradient shard
  int64_t optimizer_bytes = 0;  // AdamW moments
  int64_t buffer_bytes = 0;     // communication staging
  int64_t total() const {
    return parameter_bytes + gradient_bytes + optimizer_bytes + buffer_bytes;
  }
};

// Where this rank saw NaN or infinity in the gradients of a skipped step.
// Parameters are named by ParamInfo::name, the first in flat order.
struct NonfiniteGradients {
  // Non-finite in this rank's own gradient, from its backward (with the
  // pipeline's tied-embedding sum), before any reduction over dp.
  std::string own_param;
  // Non-finite after the reduction over dp, in what this rank holds (all of
  // it at stage 0, its pieces at 1-3); empty when dp = 1 (nothing reduced).
  std::string reduced_param;
};

// A run of this rank's optimizer state: `length` elements of parameter
// `param` (index into the parameters given at construction, flattened
// row-major) from element `offset`: the master weights and both AdamW moments.
struct OptimizerStateRun {
  size_t param = 0;
  size_t offset = 0;
  size_t length = 0;
  const float* values = nullptr;
  const float* exp_avg = nullptr;
  const float* exp_avg_sq = nullptr;
};

// What a checkpoint needs of the optimizer between steps. Stage 0 holds the
// whole state on every dp rank (replicated_over_dp); stages 1-3 a 1/dp shard.
struct OptimizerStateView {
  int64_t steps = 0;  // AdamW updates applied so far (skipped steps do not count)
  bool replicated_over_dp = false;
  std::vector<OptimizerStateRun> runs;
};

enum class StateKind { kValues, kExpAvg, kExpAvgSq };
// Fills out[0, length) with elements [offset, offset + length) of parameter
// `param`'s state of the given kind (this rank's tensor-parallel slice).
using StateSource =
    std::function<void(size_t param, StateKind kind, size_t offset, size_t length, float* out)>;

// One step's gradient reduction (the bucket collectives over dp / zero).
struct GradReductionTimes {
  double total_seconds = 0;    // running bucket collectives, on the comm thread or inline
  double exposed_seconds = 0;  // of the step's time, waiting for them after backward
  int64_t buckets = 0;
  int64_t launched_during_backward = 0;
};

class DataParallelOptimizer {
 public:
  virtual ~DataParallelOptimizer() = default;

  // Zeroes the accumulated gradients (stages 2/3: they are allocated, zeroed,
  // when the next backward needs them).
  virtual void zero_grad() = 0;
  // Makes the model ready for forward and backward: stage 3 allgathers the
  // parameters; every stage makes sure the gradient buffer is in place.
  virtual void before_forward() = 0;
  // The next backward is the step's last: its gradients are final once
  // accumulated, so buckets may be reduced during it (overlap on; a no-op
  // otherwise). Call after before_forward(), before that backward.
  virtual void begin_last_micro_batch() = 0;
  // Reduces the gradients over dp, clips them to max_grad_norm by the global
  // norm (no clipping when max_grad_norm <= 0), updates the parameters with
  // AdamW at learning rate `lr` and (stages 1/2) allgathers them. Returns the
  // global gradient norm before clipping. Collective over dp/zero, tp and pp.
  // A non-finite norm skips the update (see above) and is returned as is.
  virtual double step(double lr, double max_grad_norm) = 0;
  // Loss scaling (fp16): the gradients the next step() reduces are `scale`
  // times the true ones (backward started from loss · scale). step() divides
  // them by it after the reduction, before the norm, clipping and AdamW (one
  // pass, fused with the clipping factor), and returns the true norm. 1 (the
  // default) changes nothing.
  virtual void set_gradient_scale(double scale) = 0;
  // Whether the last step() skipped its update for a non-finite global norm
  // (the same on every rank).
  virtual bool last_step_skipped() const = 0;
  // Where this rank found the non-finite values of the last, skipped, step()
  // (both names empty otherwise, or when only other ranks held any).
  virtual const NonfiniteGradients& last_nonfinite_gradients() const = 0;
  virtual MemoryUsage memory() const = 0;
  // How the last step()'s gradient reduction went.
  virtual GradReductionTimes last_reduction() const = 0;
  // The largest memory().total() since construction.
  virtual int64_t peak_bytes() const = 0;
  // ZeRO-3: the most bytes of gathered (full, not shard) parameters alive at
  // once since construction; 0 at other stages.
  virtual int64_t peak_gathered_parameter_bytes() const { return 0; }
  // Per-layer ZeRO-3: the gate the model must call around its layers (see
  // layer_schedule.h); nullptr otherwise.
  virtual LayerGate* layer_gate() { return nullptr; }
  // The PowerSGD reducer of a powersgd policy rule (its state goes into
  // checkpoints); nullptr without one. Call between steps.
  virtual PowerSgdReducer* powersgd_reducer() { return nullptr; }
  virtual int zero_stage() const = 0;
  // DiLoCo's warm-up (parallel.diloco.warmup_steps) is over: from the next
  // step on nothing is reduced over dp, as if built with reduce_over_dp =
  // false (each dp rank a replica of its own). Idempotent. Throws
  // std::logic_error unless the optimizer reduces over dp at ZeRO stage 0
  // (where every rank holds the whole state, so nothing else changes). Call
  // between steps.
  virtual void stop_reducing_over_dp() = 0;
  // This rank's state, valid until the next call that changes it. Call
  // between steps. On a device it copies the values and moments to the host.
  virtual OptimizerStateView state() const = 0;
  // AdamW updates applied so far (state().steps, without the state).
  virtual int64_t optimizer_steps() const = 0;
  // Replaces the weights (all of this rank's parameters), the moments this
  // rank holds and the step count. Call between steps; collective-free.
  virtual void load_state(int64_t steps, const StateSource& source) = 0;
};

struct DataParallelOptimizerOptions {
  AdamWOptions adamw;
  int zero_stage = 0;                 // 0..3
  int64_t bucket_bytes = 25LL << 20;  // per collective call
  // Reduce buckets during the last backward, on a communication thread
  // (needs MPI_THREAD_MULTIPLE when dp > 1). false: all in step().
  bool overlap_grad_reduce = true;
  // false: every dp rank is a replica of its own (DiLoCo's inner steps,
  // parallel/diloco/): nothing is reduced over dp, the norm is this
  // replica's (summed over tp and pp only) and AdamW steps on its own
  // gradients, as if dp were 1. Stage 0 only.
  bool reduce_over_dp = true;
  // What a parameter's gradient needs beyond this (sparse, late, counted on
  // another stage, tied across stages) is flagged on its ParamInfo.
  //
  // The tied table on the pipeline's first and last stage (pp > 1, tied): the
  // parameter flagged ParamInfo::tied_across_stages, cut into buckets of its
  // own on both stages, so both cut it alike. Required exactly when a
  // parameter carries that flag. The stage that `reduces` (the first, which
  // holds the sum of both copies' gradients) reduces it over its dp group as
  // any gradient; the other stage does not reduce it. After the dp reduction
  // step() calls `share` on both stages for each of its buckets in order
  // (part k: its k-th bucket) with this rank's reduced part of it (the whole
  // bucket at stage 0 and under powersgd, the piece it owns at stages 1-3),
  // which must leave the reducing stage's values in `data` on both
  // (PipelineTiedEmbedding::share_reduced): both copies then take the same
  // update. Collective over the two stages' matching ranks.
  struct TiedGradient {
    bool reduces = true;
    std::function<void(size_t part, float* data, size_t n)> share;
  };
  std::optional<TiedGradient> tied_gradient;
  // ZeRO 2/3 (parallel.zero_gradient_memory: shard): hold the gradient shard
  // plus the buckets in flight, never a full flat gradient buffer; every
  // micro-batch's buckets are reduce-scattered as backward finishes them and
  // added into the shard (M micro-batches: M times the gradient traffic).
  // false (full_buffer): micro-batches accumulate in the flat buffer, reduced
  // once per step. Ignored at stages 0/1.
  bool shard_gradient_memory = false;
  // ZeRO-3 only: non-empty gathers per unit (layer) as the model's uses need
  // them, through layer_gate(); empty gathers the whole model once per step.
  // Units must follow the parameters' order.
  LayerSchedule layer_schedule;
  // ZeRO-3 with a layer_schedule: elements [offset, offset + length)
  // (row-major) of parameter `param`'s initial value. When set, the
  // parameters' values are never read (they may be unmaterialised stand-ins):
  // each rank generates its shard from it.
  std::function<void(size_t param, size_t offset, size_t length, float* out)> initial_values;
};

// Takes over the parameters: their storage moves into the optimizer's flat
// buffer (the tensors stay the same objects, now views of it; per-layer
// ZeRO-3 keeps only this rank's shard and makes them stand-ins) and, with
// overlap, hooks their gradient accumulators. Parameters must be distinct
// float32 CPU tensors. Collective over groups.dp()/zero() only when dp > 1
// (none at construction). Throws std::invalid_argument naming the culprit for
// a bad stage, bucket size, hyper-parameter or parameter, std::runtime_error
// when overlap needs a thread level MPI did not grant.
//
// With overlap, while buckets are in flight the comm thread owns groups.dp()
// (stage 0, stage 1 under powersgd) or groups.zero() (stages 1-3):
// from begin_last_micro_batch() to the end of step(), callers must not use
// that communicator (the trainer allreduces its loss over dp after step()).
std::unique_ptr<DataParallelOptimizer> make_data_parallel_optimizer(
    std::vector<ParamInfo> params, const DataParallelOptimizerOptions& options,
    ProcessGroups& groups);

}  // namespace cmpi::parallel
