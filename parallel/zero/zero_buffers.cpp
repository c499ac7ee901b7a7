// ZeroOptimizer's gradient buffers (the table in zero_optimizer.h says which
// exist at which stage, and when): the views that make the model's
// gradients slices of the flat gradient buffer, their release, and the bytes
// the optimizer holds (memory(), the peak noted after every change; the
// parameters' own buffers are ZeroParameterStore's).
#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "comm/communicator.h"
#include "parallel/mesh/process_groups.h"
#include "parallel/unmaterialised.h"
#include "parallel/zero/zero_optimizer.h"

namespace cmpi::parallel {

torch::Tensor ZeroOptimizer::grad_view(size_t i) const {
  return flat_grads_.narrow(0, int64_t(layout_.offsets()[i]), int64_t(layout_.params()[i].numel))
      .view(shapes_[i]);
}

void ZeroOptimizer::attach_gradients() {
  if (!flat_grads_.defined()) {
    flat_grads_ = torch::zeros({int64_t(layout_.padded())}, float_options_);
    note_memory();
  }
  // Stage 3 between steps, gathering per model: nothing to attach to. Per
  // layer the gradients stay attached whatever the parameters hold.
  if (!store_->materialised() && !per_layer_) return;
  for (size_t i = 0; i < params_.size(); ++i) {
    auto& grad = params_[i].tensor.mutable_grad();
    const float* expected = flat_grads_.data_ptr<float>() + layout_.offsets()[i];
    if (grad.defined() && grad.data_ptr<float>() == expected) continue;
    auto view = grad_view(i);
    if (grad.defined()) view.add_(grad.reshape(shapes_[i]));
    grad = view;
  }
}

void ZeroOptimizer::release_gradients() {
  for (auto& p : params_)
    if (p.tensor.grad().defined()) p.tensor.mutable_grad() = torch::Tensor();
  flat_grads_ = torch::Tensor();
}

StepBuffer ZeroOptimizer::reduced_gradients() const {
  return stage_ >= 2 ? StepBuffer{grad_shard_, RunAddress::kShard}
                     : StepBuffer{flat_grads_, RunAddress::kFlat};
}

void ZeroOptimizer::note_memory() {
  peak_bytes_ = std::max(peak_bytes_, memory().total());
}

MemoryUsage ZeroOptimizer::memory() const {
  const auto bytes = [](size_t elements) { return int64_t(elements * sizeof(float)); };
  MemoryUsage m;
  m.parameter_bytes = store_->parameter_bytes();
  m.gradient_bytes = bytes((flat_grads_.defined() ? layout_.padded() : 0) +
                           size_t(grad_shard_.defined() ? grad_shard_.numel() : 0)) +
                     held_gradient_bytes_;
  m.optimizer_bytes = adamw_.state_bytes();
  m.buffer_bytes = store_->buffer_bytes() +
                   bytes(scattered_.size() + size_t(received_.defined() ? received_.numel() : 0) +
                         packed_.size() * layout_.largest_piece() * size_t(dp())) +
                   int64_t(powersgd_ ? powersgd_->state_bytes() : 0);
  return m;
}

}  // namespace cmpi::parallel
