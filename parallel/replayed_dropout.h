// Dropout inside a custom autograd Function whose backward recomputes the
// probabilities instead of keeping them (the blocked attention, the ring
// attention): forward records the generator's state before its first draw,
// backward sets it again, draws the same masks in the same order, and puts
// the generator back as it found it.
#pragma once

#include <torch/torch.h>

#include <mutex>

namespace cmpi::parallel {

// Inverted dropout's mask for `like`: 1 / (1 - p) where kept, 0 where dropped.
inline torch::Tensor dropout_keep_mask(const torch::Tensor& like, double dropout,
                                       at::Generator& generator) {
  // The generators are CPU generators (checkpointed, replayed): a device
  // tensor's mask is drawn on the CPU, the CPU run's mask, and moved.
  if (!like.is_cpu())
    return torch::empty(like.sizes(), like.options().device(torch::kCPU))
        .bernoulli_(1.0 - dropout, generator)
        .div_(1.0 - dropout)
        .to(like.device());
  return torch::empty_like(like).bernoulli_(1.0 - dropout, generator).div_(1.0 - dropout);
}

// Forward: keeps `dropout` (and, when it draws, the generator and its state
// now, before any mask) in ctx for ReplayedDropout.
inline void record_dropout(torch::autograd::AutogradContext* ctx, double dropout,
                           at::Generator& generator) {
  ctx->saved_data["dropout"] = dropout;
  if (dropout <= 0) return;
  std::lock_guard<std::mutex> lock(generator.mutex());
  ctx->saved_data["generator"] = generator;
  ctx->saved_data["state"] = generator.get_state();
}

// Backward: for its lifetime the recorded generator stands at the state
// forward recorded; afterwards it is back where it was.
class ReplayedDropout {
 public:
  explicit ReplayedDropout(torch::autograd::AutogradContext* ctx)
      : dropout_(ctx->saved_data["dropout"].toDouble()) {
    if (dropout_ <= 0) return;
    generator_ = ctx->saved_data["generator"].toGenerator();
    std::lock_guard<std::mutex> lock(generator_.mutex());
    now_ = generator_.get_state();
    generator_.set_state(ctx->saved_data["state"].toTensor());
  }
  ~ReplayedDropout() {
    if (dropout_ <= 0) return;
    std::lock_guard<std::mutex> lock(generator_.mutex());
    generator_.set_state(now_);
  }
  ReplayedDropout(const ReplayedDropout&) = delete;
  ReplayedDropout& operator=(const ReplayedDropout&) = delete;

  double dropout() const { return dropout_; }
  at::Generator& generator() { return generator_; }

 private:
  double dropout_;
  at::Generator generator_;
  at::Tensor now_;
};

}  // namespace cmpi::parallel
