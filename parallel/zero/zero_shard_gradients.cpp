// ZeroOptimizer's shard-only gradient memory (ZeRO 2/3 with
// parallel.zero_gradient_memory: shard): no flat gradient buffer lives
// across a step. Works as follows, per micro-batch:
//   1. autograd accumulates each parameter's gradient of this backward into
//      a tensor of its own (.grad(), undefined before: nothing was attached);
//   2. a post hook on every gradient accumulator reports the parameter
//      ready; the GradientBucketReducer (every_backward) launches each
//      bucket, last bucket first, once all the parameters overlapping it are
//      ready;
//   3. stream_bucket() packs the bucket from those gradients into the next
//      of two bucket-sized buffers (waiting for that buffer's previous
//      reduction first: at most two buckets in flight), frees every gradient
//      whose buckets are all packed this round, and queues the reduction;
//   4. reduce_streamed_bucket(), on the comm thread, reduce-scatters the
//      packed bucket over zero (through the policy, role and error-feedback
//      key as full_buffer's; exact buckets by the exact sum) into a
//      piece-sized buffer and adds it into this rank's gradient shard.
// A pre hook on every accumulator closes a round whose parameter reports
// again (one unused in the last backward kept it open), before the new
// gradient is added to anything. Late gradients (the tied table, to which
// another stage adds after backward) and whatever shares a bucket with them
// keep accumulating in autograd's tensors over the step and are packed in
// step(), once. The sum over dp is per micro-batch and then over the
// micro-batches: reassociated against full_buffer, so close, not
// bit-identical; the same on every rank, so replicas stay equal.
#include <algorithm>
#include <cstring>

#include <torch/csrc/autograd/function.h>

#include "comm/communicator.h"
#include "compress/nonfinite.h"
#include "parallel/mesh/process_groups.h"
#include "parallel/zero/zero_optimizer.h"

namespace cmpi::parallel {

// Fires before AccumulateGrad adds this backward's gradient to .grad().
struct ZeroOptimizer::GradientArrivingHook final : torch::autograd::FunctionPreHook {
  GradientArrivingHook(ZeroOptimizer* optimizer, size_t param)
      : optimizer(optimizer), param(param) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& grads) override {
    optimizer->on_gradient_arriving(param);
    return grads;
  }
  ZeroOptimizer* optimizer;
  size_t param;
};

void ZeroOptimizer::add_arriving_hook(torch::autograd::Node& accumulator, size_t param) {
  auto hook = std::make_unique<GradientArrivingHook>(this, param);
  arriving_hooks_.push_back(hook.get());
  accumulator.add_pre_hook(std::move(hook));
}

void ZeroOptimizer::remove_arriving_hooks() {
  for (size_t i = 0; i < arriving_hooks_.size(); ++i) {
    auto& hooks = accumulators_[i]->pre_hooks();
    hooks.erase(std::remove_if(hooks.begin(), hooks.end(),
                               [&](const auto& h) { return h.get() == arriving_hooks_[i]; }),
                hooks.end());
  }
}

void ZeroOptimizer::on_gradient_arriving(size_t param) {
  torch::NoGradGuard no_grad;
  reducer_->param_arriving(param);
}

std::vector<size_t> ZeroOptimizer::deferred_params() const {
  std::vector<char> deferred(params_.size(), 0);
  for (size_t i = 0; i < params_.size(); ++i)
    deferred[i] = layout_.params()[i].tied_copy || params_[i].late_gradient;
  // A bucket holding a deferred parameter is packed in step(), so every
  // parameter in it must still hold its whole step's gradient then.
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& in_bucket : params_of_bucket_) {
      const bool any = std::any_of(in_bucket.begin(), in_bucket.end(),
                                   [&](size_t p) { return deferred[p] != 0; });
      for (size_t p : in_bucket)
        if (any && !deferred[p]) {
          deferred[p] = 1;
          changed = true;
        }
    }
  }
  std::vector<size_t> out;
  for (size_t i = 0; i < params_.size(); ++i)
    if (deferred[i]) out.push_back(i);
  return out;
}

int64_t ZeroOptimizer::held_gradient_bytes() const {
  int64_t bytes = 0;
  for (const auto& p : params_)
    if (p.tensor.grad().defined()) bytes += p.tensor.grad().numel() * int64_t(sizeof(float));
  return bytes;
}

void ZeroOptimizer::stream_bucket(size_t b) {
  torch::NoGradGuard no_grad;
  const auto& bucket = layout_.buckets()[b];
  const size_t begin = bucket.start, span = bucket.piece * size_t(dp());
  PackedBucket& slot = packed_[next_packed_];
  next_packed_ = (next_packed_ + 1) % packed_.size();
  if (slot.sent != 0) queue_->wait(slot.sent);  // its previous bucket is reduced
  float* packed = slot.data.data_ptr<float>();
  std::memset(packed, 0, span * sizeof(float));  // padding, and gradients never computed
  held_gradient_bytes_ = held_gradient_bytes();
  note_memory();
  for (size_t p : params_of_bucket_[b]) {
    auto& grad = params_[p].tensor.mutable_grad();
    const size_t offset = layout_.offsets()[p], numel = layout_.params()[p].numel;
    const size_t from = std::max(offset, begin), to = std::min(offset + numel, begin + span);
    if (grad.defined() && from < to) {
      if (!grad.is_contiguous()) grad = grad.contiguous();
      std::memcpy(packed + (from - begin), grad.data_ptr<float>() + (from - offset),
                  (to - from) * sizeof(float));
    }
    if (--unpacked_buckets_[p] == 0) {
      grad = torch::Tensor();  // the next backward starts a fresh gradient
      unpacked_buckets_[p] = buckets_per_param_[p];
    }
  }
  slot.sent =
      queue_->submit([this, b, packed] { reduce_streamed_bucket(b, packed); },
                     "gradient bucket " + std::to_string(b) + " of " +
                         std::to_string(layout_.buckets().size()) + " (reduce-scatter over zero)");
}

void ZeroOptimizer::reduce_streamed_bucket(size_t b, const float* packed) {
  const auto& bucket = layout_.buckets()[b];
  const size_t span = bucket.piece * size_t(dp());
  if (dp() > 1) {
    const size_t bad = compress::first_nonfinite(packed, span);
    if (bad < span) own_nonfinite_at_[b] = std::min(own_nonfinite_at_[b], bucket.start + bad);
  }
  if (!reduced_here(bucket)) return;  // share_tied_gradient() brings the reduced values
  float* shard = grad_shard_.data_ptr<float>() + bucket.shard_offset;
  const float* piece = packed;  // dp = 1: the bucket is the piece
  if (dp() > 1) {
    float* received = received_.data_ptr<float>();
    const std::vector<size_t> counts(size_t(dp()), bucket.piece);
    const comm::Role role = bucket.own ? comm::Role::kEmbeddingGradient : comm::Role::kGradient;
    if (bucket.exact)
      groups_.zero().exact_reduce_scatter(packed, received, counts);
    else
      groups_.zero().reduce_scatter(packed, received, counts, role, b);
    piece = received;
  }
  for (size_t i = 0; i < bucket.piece; ++i) shard[i] += piece[i];
}

}  // namespace cmpi::parallel
