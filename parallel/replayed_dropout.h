// Dropout inside a custom autograd Function whose backward recomputes the
// probabilities instead of keeping them (the blocked attention, the ring
// attention): forward records the generator's state before its first draw,
// backward sets it again, draws the same masks in the same order, and puts
// the generator back as it found it. Also the draw every mask of the
// model's own dropouts takes (keep_draws).
#pragma once

#include <torch/torch.h>

#include <mutex>

namespace cmpi::parallel {

// 1 (kept, with probability `keep`) or 0 in `like`'s shape, dtype and device,
// drawn from `generator`. The generators are CPU generators (checkpointed,
// replayed by recomputation): a device tensor's draws are made on the CPU,
// the CPU run's draws, and moved.
inline torch::Tensor keep_draws(const torch::Tensor& like, double keep, at::Generator& generator) {
  if (like.is_cpu()) return torch::empty_like(like).bernoulli_(keep, generator);
  return torch::empty(like.sizes(), like.options().device(torch::kCPU))
      .bernoulli_(keep, generator)
      .to(like.device());
}

// Inverted dropout's mask for `like`: 1 / (1 - p) where kept, 0 where dropped.
inline torch::Tensor dropout_keep_mask(const torch::Tensor& like, double dropout,
                                       at::Generator& generator) {
  return keep_draws(like, 1.0 - dropout, generator).div_(1.0 - dropout);
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
