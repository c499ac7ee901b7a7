// How a step runs (see zero_optimizer.h for the buffers of each stage):
//   0. during the last micro-batch's backward (overlap on, dp > 1): each
//      bucket whose gradients are all final is queued to the comm thread, in
//      launch order (last bucket first), and reduced as in 2 while backward
//      goes on;
//      Shard-only gradients (zero_shard_gradients.cpp): every backward's
//      buckets are packed and reduce-scattered into the shard this way, and
//      step() first packs what is left, so 1 and the flat buffer of 2 fall away;
//   1. fold in gradients autograd left outside the flat buffer;
//      stage 3: release the full parameters (forward and backward are done);
//   2. reduce: per bucket, an allreduce over dp (stage 0, and stage 1 under
//      powersgd), a reduce-scatter over zero whose piece is copied back into
//      the flat gradients (stage 1), or a reduce-scatter over zero into the
//      gradient shard (stages 2/3) — the buckets step 0 did not launch
//      (unused or late gradients, overlap off) — and wait for all of them;
//      stages 2/3 then free the flat gradients;
//   3. global norm from the reduced gradient this rank owns; a non-finite
//      norm ends the step here (nothing updated: see
//      data_parallel_optimizer.h), else clip;
//   4. AdamW on this rank's segments (all of them at stage 0);
//   5. stages 1/2: allgather each bucket's updated pieces over zero; the own
//      piece is restored afterwards so a lossy weight rule never perturbs the
//      master copy. Stage 3 gathers in the next before_forward().
// This file: construction, the reduction's set-up (hooks on the gradient
// accumulators), the per-step entry points and checkpoint state. Elsewhere:
// the gradient buffers, their attachment to the parameters, releases and
// memory (zero_buffers.cpp); step 2 (zero_gradient_reduction.cpp;
// shard-only: zero_shard_gradients.cpp); after a non-finite norm, where it
// came from (zero_nonfinite.cpp); steps 3 and 4 (ShardedAdamW); the
// parameters' values and their gathers, step 5 (ZeroParameterStore).
#include "parallel/zero/zero_optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <unordered_set>

#include <mpi.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/variable.h>

#include "comm/communicator.h"
#include "parallel/mesh/process_groups.h"
#include "parallel/zero/flat_param.h"

namespace cmpi::parallel {
namespace {

// tp_replicas: tp > 1, so every parameter not tensor_parallel is held by
// every tp rank and is reduced exactly (data_parallel_optimizer.h).
std::vector<FlatParam> flat_params_of(const std::vector<ParamInfo>& params,
                                      const DataParallelOptimizerOptions& options,
                                      bool tp_replicas) {
  std::vector<FlatParam> flat;
  std::unordered_set<const void*> seen;
  std::string tied;  // the parameter flagged tied_across_stages, if any
  for (const auto& p : params) {
    const auto& t = p.tensor;
    if (!t.defined())
      throw std::invalid_argument("optimizer parameter " + p.name + " is undefined");
    if (t.scalar_type() != torch::kFloat)
      throw std::invalid_argument("optimizer parameter " + p.name + " is " +
                                  std::string(c10::toString(t.scalar_type())) +
                                  "; only float32 is supported");
    if (!seen.insert(t.unsafeGetTensorImpl()).second)
      throw std::invalid_argument("optimizer parameter " + p.name + " is listed twice");
    if (p.tied_across_stages && !options.tied_gradient)
      throw std::invalid_argument("optimizer parameter " + p.name +
                                  " is tied_across_stages, but no tied_gradient says how to "
                                  "share it");
    if (p.tied_across_stages && !tied.empty())
      throw std::invalid_argument("optimizer parameters " + tied + " and " + p.name +
                                  " are both tied_across_stages; at most one may be");
    if (p.tied_across_stages) tied = p.name;
    flat.push_back(flat_param_of(p, tp_replicas));
  }
  if (options.tied_gradient && tied.empty())
    throw std::invalid_argument(
        "tied_gradient is set, but no parameter of this rank is tied_across_stages");
  if (options.tied_gradient && !options.tied_gradient->share)
    throw std::invalid_argument("tied_gradient " + tied + " has no share function");
  return flat;
}

int checked_stage(int stage) {
  if (stage < 0 || stage > 3)
    throw std::invalid_argument("parallel.zero_stage = " + std::to_string(stage) +
                                ": must be 0, 1, 2 or 3");
  return stage;
}

bool gathers_per_layer(const DataParallelOptimizerOptions& options) {
  return options.zero_stage == 3 && !options.layer_schedule.empty();
}

std::vector<size_t> unit_ends_of(const DataParallelOptimizerOptions& options) {
  return gathers_per_layer(options) ? options.layer_schedule.unit_ends : std::vector<size_t>{};
}

const DataParallelOptimizerOptions& validated(const DataParallelOptimizerOptions& options) {
  validate(options.adamw);
  checked_stage(options.zero_stage);
  if (!options.reduce_over_dp && options.zero_stage != 0)
    throw std::invalid_argument(
        "ZeRO stage " + std::to_string(options.zero_stage) +
        " shards over dp, but replicas that do not reduce over dp (DiLoCo) hold everything");
  return options;
}

// The ranks gradients are reduced over: the dp group, or this rank alone when
// every dp rank is a replica of its own.
int reducing_ranks(const DataParallelOptimizerOptions& options, ProcessGroups& groups) {
  return options.reduce_over_dp ? groups.dp().size() : 1;
}

std::vector<std::vector<int64_t>> shapes_of(const std::vector<ParamInfo>& params) {
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& p : params) shapes.push_back(p.tensor.sizes().vec());
  return shapes;
}

// Whether buckets are reduced on a communication thread during backward.
bool overlaps(const DataParallelOptimizerOptions& options, int dp) {
  if (!options.overlap_grad_reduce || dp == 1) return false;
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  if (level < MPI_THREAD_MULTIPLE)
    throw std::runtime_error(
        "training.overlap_grad_reduce needs MPI initialised with MPI_THREAD_MULTIPLE (the "
        "gradient buckets are reduced on a communication thread), but this MPI granted "
        "thread level " +
        std::to_string(level) + "; set training.overlap_grad_reduce: false");
  return true;
}

}  // namespace

ZeroOptimizer::ZeroOptimizer(std::vector<ParamInfo> params,
                             const DataParallelOptimizerOptions& options, ProcessGroups& groups)
    : params_(std::move(params)),
      shapes_(shapes_of(params_)),
      options_(validated(options)),
      groups_(groups),
      stage_(options.zero_stage),
      per_layer_(gathers_per_layer(options)),
      layout_(flat_params_of(params_, options, groups.tp().size() > 1),
              reducing_ranks(options, groups), options.reduce_over_dp ? groups.dp().rank() : 0,
              options.bucket_bytes, unit_ends_of(options)),
      float_options_(
          torch::TensorOptions().dtype(torch::kFloat).device(device_of_parameters(params_))),
      // On a device the buckets are staged on the step's own thread.
      overlap_(float_options_.device().is_cpu() &&
               overlaps(options, reducing_ranks(options, groups))),
      shard_only_(stage_ >= 2 && options.shard_gradient_memory),
      // Every zero-group collective goes through the one queue (see the header).
      queue_(per_layer_ || shard_only_ ? std::make_unique<OrderedCommQueue>(overlap_) : nullptr),
      store_(std::make_unique<ZeroParameterStore>(
          params_, shapes_, layout_, options_, groups.zero(), queue_.get(),
          [this] { note_memory(); }, float_options_)),
      adamw_(options.adamw, layout_,
             stage_ == 0 ? layout_.whole_segments() : layout_.owned_segments(),
             stage_ == 0 ? layout_.padded() : layout_.shard_size(), float_options_) {
  // Off the CPU the step runs as tensor operations (ShardedAdamW's, the
  // non-finite search's) at stages 0-2, the buckets, the tied table's shared
  // parts, stage 2's reduced pieces and stages 1-2's updated pieces staged
  // through host memory (reduce_bucket_staged, share_tied_gradient,
  // ZeroParameterStore::allgather_updated_staged); stage 3's shard and
  // gathers, and the shard-only gradient memory, take host pointers.
  const bool on_device = !float_options_.device().is_cpu();
  if (on_device && (stage_ > 2 || shard_only_))
    throw std::invalid_argument("ZeRO optimizer: parameters on " + float_options_.device().str() +
                                " are trained at ZeRO stages 0-2 with a full gradient buffer so "
                                "far (stage " +
                                std::to_string(stage_) +
                                (shard_only_ ? ", shard-only gradient memory" : "") + ")");
  const auto pinned = torch::TensorOptions().dtype(torch::kFloat).pinned_memory(true);
  if (on_device && (dp() > 1 || options.tied_gradient || stage_ == 2))
    host_grads_ = torch::zeros({int64_t(layout_.padded())}, pinned);
  if (on_device && stage_ == 2)
    host_grad_shard_ = torch::zeros({int64_t(layout_.shard_size())}, pinned);
  powersgd_ = make_powersgd_reducer();
  // ZeRO-1 updates only its pieces, so it needs only their sum: a
  // reduce-scatter sends half an allreduce's bytes. PowerSGD sums low-rank
  // factors, which only an allreduce can.
  if (stage_ >= 2)
    reduction_ = Reduction::kScatterToShard;
  else if (stage_ == 1 && dp() > 1 && !powersgd_)
    reduction_ = Reduction::kScatterInPlace;
  // Except the buckets the dp policy sends through the block-sparse allreduce
  // (a sparse embedding's): it sends only their non-zero blocks, which a
  // dense reduce-scatter cannot.
  sparse_allreduce_.assign(layout_.buckets().size(), false);
  if (reduction_ == Reduction::kScatterInPlace && groups.dp().policy() != nullptr)
    for (size_t b = 0; b < layout_.buckets().size(); ++b) {
      const auto& bucket = layout_.buckets()[b];
      if (!bucket.own) continue;
      const auto* route = groups.dp().policy()->route(
          comm::Op::kAllreduce, comm::Role::kEmbeddingGradient,
          bucket.piece * size_t(dp()) * sizeof(float), groups.dp().collective_locality());
      sparse_allreduce_[b] = route != nullptr && route->codec != nullptr &&
                             route->codec->id() == compress::CodecId::kBlockSparse;
    }
  if (groups.zero().size() != groups.dp().size() || groups.zero().rank() != groups.dp().rank())
    throw std::logic_error("ZeRO: the zero group is not a duplicate of the dp group");
  if (stage_ >= 2) grad_shard_ = torch::zeros({int64_t(layout_.shard_size())}, float_options_);
  if (reduction_ == Reduction::kScatterInPlace) scattered_.assign(layout_.largest_piece(), 0.0f);
  own_nonfinite_at_.assign(layout_.buckets().size(), kAllFinite);
  set_up_reduction();
  note_memory();
}

// Fires after AccumulateGrad has added this backward's gradient to .grad().
struct ZeroOptimizer::GradientReadyHook final : torch::autograd::FunctionPostHook {
  GradientReadyHook(ZeroOptimizer* optimizer, size_t param) : optimizer(optimizer), param(param) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list&) override {
    optimizer->on_gradient_accumulated(param);
    return outputs;
  }
  ZeroOptimizer* optimizer;
  size_t param;
};

void ZeroOptimizer::set_up_reduction() {
  const auto& buckets = layout_.buckets();
  std::vector<std::vector<size_t>> params_of_bucket(buckets.size());
  size_t first = 0;  // params before it end before the bucket
  for (size_t b = 0; b < buckets.size(); ++b) {
    const size_t begin = buckets[b].start, end = begin + buckets[b].piece * size_t(dp());
    while (first < params_.size() &&
           layout_.offsets()[first] + layout_.params()[first].numel <= begin)
      ++first;
    for (size_t p = first; p < params_.size() && layout_.offsets()[p] < end; ++p)
      params_of_bucket[b].push_back(p);
  }
  std::vector<size_t> late;
  for (size_t i = 0; i < params_.size(); ++i)
    if (params_[i].late_gradient) late.push_back(i);
  params_of_bucket_ = params_of_bucket;
  if (shard_only_) late = deferred_params();
  // Reverse flat order is reverse parameter order: what backward finishes
  // first. Shard-only, the buckets packed in step() go last.
  std::vector<char> deferred(buckets.size(), 0);
  if (shard_only_)
    for (size_t p : late)
      for (size_t b = 0; b < buckets.size(); ++b)
        for (size_t q : params_of_bucket[b]) deferred[b] |= q == p;
  std::vector<size_t> launch_order;
  for (int pass = 0; pass < 2; ++pass)
    for (size_t k = buckets.size(); k-- > 0;)
      if (deferred[k] == pass) launch_order.push_back(k);

  GradientBucketReducer::Options reducer_options;
  reducer_options.threaded = overlap_ && !per_layer_ && !shard_only_;
  reducer_options.every_backward = shard_only_;
  reducer_options.what =
      reduction_ == Reduction::kAllreduce ? "allreduce over dp" : "reduce-scatter over zero";
  GradientBucketReducer::RunBucket run = [this](size_t b) {
    if (host_grads_.defined())
      reduce_bucket_staged(b);
    else
      reduce_bucket(b, reduce_flat_);
  };
  if (per_layer_) {
    run = [this](size_t b) {
      float* flat = reduce_flat_;
      queue_->submit([this, b, flat] { reduce_bucket(b, flat); },
                     "gradient bucket " + std::to_string(b) + " of " +
                         std::to_string(layout_.buckets().size()) + " (reduce-scatter over zero)");
    };
  }
  if (shard_only_) {
    // The bucket is packed here, on the thread running backward; its
    // reduction goes through the queue (shared with per-layer gathers).
    run = [this](size_t b) { stream_bucket(b); };
    buckets_per_param_.assign(params_.size(), 0);
    for (const auto& in_bucket : params_of_bucket_)
      for (size_t p : in_bucket) ++buckets_per_param_[p];
    unpacked_buckets_ = buckets_per_param_;
    const size_t span = layout_.largest_piece() * size_t(dp());
    packed_.resize(std::min<size_t>(2, buckets.size()));
    for (auto& p : packed_) p.data = torch::zeros({int64_t(span)}, float_options_);
    if (dp() > 1) received_ = torch::zeros({int64_t(layout_.largest_piece())}, float_options_);
  }
  reducer_ = std::make_unique<GradientBucketReducer>(std::move(params_of_bucket), params_.size(),
                                                     std::move(launch_order), late, std::move(run),
                                                     reducer_options);
  // Shard-only needs the hooks without overlap too: they are what frees
  // each bucket's gradients during backward.
  if (!overlap_ && !shard_only_) return;
  for (size_t i = 0; i < params_.size(); ++i) {
    // Held here: a tensor keeps its accumulator only weakly, and the hook
    // lives on it. Frozen parameters have none and stay for step().
    auto accumulator = torch::autograd::impl::grad_accumulator(params_[i].tensor);
    if (!accumulator) continue;
    hook_keys_.push_back(accumulator->add_post_hook(std::make_unique<GradientReadyHook>(this, i)));
    if (shard_only_) add_arriving_hook(*accumulator, i);
    accumulators_.push_back(std::move(accumulator));
  }
}

ZeroOptimizer::~ZeroOptimizer() {
  for (size_t i = 0; i < accumulators_.size(); ++i) accumulators_[i]->del_post_hook(hook_keys_[i]);
  remove_arriving_hooks();
  if (queue_ && !queue_->shutdown()) {
    // A zero-group collective never finished (only on error paths, before the
    // job ends): its thread still writes these buffers, so they must outlive us.
    std::fprintf(stderr, "ZeRO optimizer: abandoning a zero-group collective still in flight\n");
    new torch::Tensor(std::move(flat_grads_));
    new torch::Tensor(std::move(grad_shard_));
    new std::vector<PackedBucket>(std::move(packed_));
    new torch::Tensor(std::move(received_));
    store_->abandon_in_flight();
    (void)store_.release();
    (void)queue_.release();
  }
  if (reducer_ && !reducer_->shutdown()) {
    // A bucket collective never finished (only on error paths, before the job
    // ends): its thread still writes these buffers, so they must outlive us.
    std::fprintf(stderr, "ZeRO optimizer: abandoning a gradient bucket still in flight\n");
    new torch::Tensor(std::move(flat_grads_));
    new torch::Tensor(std::move(grad_shard_));
    (void)reducer_.release();
  }
}

// ------------------------------------------------------------ per step

void ZeroOptimizer::zero_grad() {
  reducer_->wait();  // nothing is in flight between steps; a failure surfaces here
  if (queue_) queue_->wait_all();
  if (flat_grads_.defined()) flat_grads_.zero_();
  if (shard_only_) {
    // Every micro-batch's pieces are added into the shard.
    grad_shard_.zero_();
    std::fill(own_nonfinite_at_.begin(), own_nonfinite_at_.end(), kAllFinite);
  }
}

void ZeroOptimizer::before_forward() {
  torch::NoGradGuard no_grad;
  reducer_->wait();  // stage 3 gathers over zero below
  if (queue_) queue_->wait_all();
  if (!per_layer_ && !store_->materialised()) store_->gather();
  if (!shard_only_) attach_gradients();
}

void ZeroOptimizer::begin_last_micro_batch() {
  if (!overlapping() || shard_only_) return;  // shard-only: every backward reduces
  if (!flat_grads_.defined())
    throw std::logic_error("ZeRO optimizer: begin_last_micro_batch() before before_forward()");
  reducer_->arm();
  reduce_flat_ = flat_grads_.data_ptr<float>();
}

void ZeroOptimizer::on_gradient_accumulated(size_t i) {
  if (!reducer_->armed()) return;
  if (shard_only_) {
    reducer_->param_ready(i);  // its gradient stays autograd's until its buckets are packed
    return;
  }
  torch::NoGradGuard no_grad;
  auto& grad = params_[i].tensor.mutable_grad();
  const float* expected = flat_grads_.data_ptr<float>() + layout_.offsets()[i];
  if (!grad.defined()) return;  // nothing accumulated after all: step() handles it
  if (grad.data_ptr<float>() != expected) {
    // Autograd put the gradient elsewhere: fold it in before its bucket goes.
    auto view = grad_view(i);
    view.add_(grad.reshape(shapes_[i]));
    grad = view;
  }
  reducer_->param_ready(i);
}

void ZeroOptimizer::stop_reducing_over_dp() {
  if (stage_ != 0 || !options_.reduce_over_dp)
    throw std::logic_error(
        "stop_reducing_over_dp: only an optimizer that reduces over dp at ZeRO stage 0 can stop "
        "(DiLoCo's warm-up), this one is at stage " +
        std::to_string(stage_) + (options_.reduce_over_dp ? "" : " and never reduced over dp"));
  reducing_over_dp_ = false;
}

void ZeroOptimizer::set_gradient_scale(double scale) {
  if (!(scale > 0) || !std::isfinite(scale))
    throw std::invalid_argument("gradient scale must be a positive finite number, got " +
                                std::to_string(scale));
  gradient_scale_ = scale;
}

double ZeroOptimizer::step(double lr, double max_grad_norm) {
  torch::NoGradGuard no_grad;
  if (shard_only_)
    reducer_->launch_remaining();  // packs the rest before stage 3 frees the parameters
  else
    attach_gradients();  // launched buckets hold only parameters already in place
  if (stage_ == 3) store_->release();
  reduce_gradients();
  share_tied_gradient();
  if (stage_ >= 2) release_gradients();
  held_gradient_bytes_ = 0;  // shard-only: every gradient was packed and freed
  // Loss scaling: the norm of the true gradients (a power-of-two scale
  // divides exactly).
  // After an allreduce a rank holds the whole reduced gradient, so the norm
  // needs no dp traffic; after a reduce-scatter only its pieces.
  const bool partial = reduction_ != Reduction::kAllreduce;
  const double norm =
      adamw_.global_norm(reduced_gradients(),
                         partial ? layout_.owned_segments() : layout_.whole_segments(), partial,
                         groups_) /
      gradient_scale_;
  last_step_skipped_ = !std::isfinite(norm);
  last_nonfinite_ = last_step_skipped_ ? locate_nonfinite_gradients() : NonfiniteGradients{};
  if (last_step_skipped_) {
    // Stages 1/2 skip their allgather too: no rank changed its piece.
    note_memory();
    return norm;
  }
  // One pass over the gradients: unscale (loss scaling) and clip together.
  double factor = 1.0 / gradient_scale_;
  if (max_grad_norm > 0) {
    const double clip = max_grad_norm / (norm + 1e-6);
    if (clip < 1.0) factor *= clip;
  }
  if (factor != 1.0) {
    StepBuffer grads = reduced_gradients();
    adamw_.scale(grads.data, float(factor));
  }
  adamw_.update(lr, store_->values(), reduced_gradients());
  if (stage_ == 1 || stage_ == 2) store_->allgather_updated();
  note_memory();
  return norm;
}

// ------------------------------------------------------------ checkpoints

OptimizerStateView ZeroOptimizer::state() const {
  OptimizerStateView view;
  view.steps = adamw_.steps();
  view.replicated_over_dp = stage_ == 0;
  const bool on_host = float_options_.device().is_cpu();
  if (!on_host) {
    // Stages 0-1 (the constructor's check): the values are the flat buffer.
    host_values_ = store_->values().data.cpu();
    host_exp_avg_ = adamw_.exp_avg().cpu();
    host_exp_avg_sq_ = adamw_.exp_avg_sq().cpu();
  }
  const float* exp_avg = (on_host ? adamw_.exp_avg() : host_exp_avg_).data_ptr<float>();
  const float* exp_avg_sq = (on_host ? adamw_.exp_avg_sq() : host_exp_avg_sq_).data_ptr<float>();
  for (const auto& s : adamw_.runs()) {
    OptimizerStateRun run;
    run.param = s.param;
    run.offset = s.flat_offset - layout_.offsets()[s.param];
    run.length = s.length;
    run.values = on_host ? store_->values_of(s) : host_values_.data_ptr<float>() + s.flat_offset;
    run.exp_avg = exp_avg + s.shard_offset;
    run.exp_avg_sq = exp_avg_sq + s.shard_offset;
    view.runs.push_back(run);
  }
  return view;
}

void ZeroOptimizer::load_state(int64_t steps, const StateSource& source) {
  reducer_->wait();
  if (queue_) queue_->wait_all();
  adamw_.set_steps(steps);
  store_->load(source, adamw_.runs());
  // On a device the moments are read into host copies, then moved.
  const bool on_host = float_options_.device().is_cpu();
  auto exp_avg = on_host ? adamw_.exp_avg() : adamw_.exp_avg().cpu();
  auto exp_avg_sq = on_host ? adamw_.exp_avg_sq() : adamw_.exp_avg_sq().cpu();
  for (const auto& s : adamw_.runs()) {
    const size_t offset = s.flat_offset - layout_.offsets()[s.param];
    source(s.param, StateKind::kExpAvg, offset, s.length,
           exp_avg.data_ptr<float>() + s.shard_offset);
    source(s.param, StateKind::kExpAvgSq, offset, s.length,
           exp_avg_sq.data_ptr<float>() + s.shard_offset);
  }
  if (!on_host) {
    adamw_.exp_avg().copy_(exp_avg);
    adamw_.exp_avg_sq().copy_(exp_avg_sq);
  }
}

}  // namespace cmpi::parallel
