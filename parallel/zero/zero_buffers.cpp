// ZeroOptimizer's buffers (the table in zero_optimizer.h says which exist at
// which stage, and when): the views that make the model's parameters and
// gradients slices of the flat buffers, this rank's shards filled from them,
// their gathers over zero (stage 3 before forward: every bucket's pieces
// into the flat parameters; stages 1/2 after the update: each bucket's
// updated pieces, through a staging copy of the own piece, so that a lossy
// weight rule never perturbs the master values), their releases, and the
// bytes they hold (memory(), the peak noted after every change).
#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "comm/communicator.h"
#include "parallel/mesh/process_groups.h"
#include "parallel/unmaterialised.h"
#include "parallel/zero/zero_optimizer.h"

namespace cmpi::parallel {

torch::Tensor ZeroOptimizer::param_view(size_t i) const {
  return flat_params_.narrow(0, int64_t(layout_.offsets()[i]), int64_t(layout_.params()[i].numel))
      .view(shapes_[i]);
}

torch::Tensor ZeroOptimizer::grad_view(size_t i) const {
  return flat_grads_.narrow(0, int64_t(layout_.offsets()[i]), int64_t(layout_.params()[i].numel))
      .view(shapes_[i]);
}

void ZeroOptimizer::fill_param_shard_per_layer() {
  param_shard_.assign(layout_.shard_size(), 0.0f);
  for (const auto& s : layout_.owned_segments()) {
    const size_t offset = s.flat_offset - layout_.offsets()[s.param];
    float* out = param_shard_.data() + s.shard_offset;
    if (options_.initial_values) {
      options_.initial_values(s.param, offset, s.length, out);
      continue;
    }
    const auto& tensor = params_[s.param].tensor;
    if (!is_materialised(tensor))
      throw std::invalid_argument("ZeRO-3: parameter " + params_[s.param].name +
                                  " has no values and no initial_values were given");
    const auto values = tensor.detach().contiguous();
    std::memcpy(out, values.data_ptr<float>() + offset, s.length * sizeof(float));
  }
  for (size_t i = 0; i < params_.size(); ++i)
    params_[i].tensor.set_data(unmaterialised(shapes_[i]));
}

void ZeroOptimizer::copy_flat_to_param_shard() {
  const float* flat = flat_params_.data_ptr<float>();
  for (const auto& b : layout_.buckets())
    std::memcpy(param_shard_.data() + b.shard_offset,
                flat + b.start + size_t(layout_.dp_rank()) * b.piece, b.piece * sizeof(float));
}

void ZeroOptimizer::gather_parameters() {
  flat_params_ = torch::empty({int64_t(layout_.padded())}, torch::kFloat);
  float* flat = flat_params_.data_ptr<float>();
  for (size_t b = 0; b < layout_.buckets().size(); ++b) {
    const auto& bucket = layout_.buckets()[b];
    if (dp() == 1) {
      std::memcpy(flat + bucket.start, param_shard_.data() + bucket.shard_offset,
                  bucket.piece * sizeof(float));
      continue;
    }
    std::fill(counts_.begin(), counts_.end(), bucket.piece);
    groups_.zero().allgather(param_shard_.data() + bucket.shard_offset, flat + bucket.start,
                             counts_, comm::Role::kWeight, kWeightKeyBase + b);
  }
  for (size_t i = 0; i < params_.size(); ++i) params_[i].tensor.set_data(param_view(i));
  peak_gathered_bytes_ = std::max(peak_gathered_bytes_, int64_t(layout_.padded() * sizeof(float)));
  note_memory();
}

int64_t ZeroOptimizer::peak_gathered_parameter_bytes() const {
  return gatherer_ ? gatherer_->peak_bytes() : peak_gathered_bytes_;
}

void ZeroOptimizer::release_parameters() {
  for (auto& p : params_) {
    p.tensor.mutable_grad() = torch::Tensor();
    p.tensor.set_data(torch::empty({0}, torch::kFloat));
  }
  flat_params_ = torch::Tensor();
}

void ZeroOptimizer::attach_gradients() {
  if (!flat_grads_.defined()) {
    flat_grads_ = torch::zeros({int64_t(layout_.padded())}, torch::kFloat);
    note_memory();
  }
  // Stage 3 between steps, gathering per model: nothing to attach to. Per
  // layer the gradients stay attached whatever the parameters hold.
  if (!flat_params_.defined() && !per_layer_) return;
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

void ZeroOptimizer::note_memory() {
  peak_bytes_ = std::max(peak_bytes_, memory().total());
}

MemoryUsage ZeroOptimizer::memory() const {
  const auto bytes = [](size_t elements) { return int64_t(elements * sizeof(float)); };
  MemoryUsage m;
  m.parameter_bytes = bytes((flat_params_.defined() ? layout_.padded() : 0) + param_shard_.size()) +
                      (gatherer_ ? gatherer_->live_bytes() : 0);
  m.gradient_bytes = bytes((flat_grads_.defined() ? layout_.padded() : 0) + grad_shard_.size()) +
                     held_gradient_bytes_;
  m.optimizer_bytes = bytes(exp_avg_.size() + exp_avg_sq_.size());
  m.buffer_bytes = bytes(staging_.size() + scattered_.size() +
                         size_t(received_.defined() ? received_.numel() : 0) +
                         packed_.size() * layout_.largest_piece() * size_t(dp())) +
                   int64_t(powersgd_ ? powersgd_->state_bytes() : 0);
  return m;
}

void ZeroOptimizer::allgather_parameters() {
  if (dp() == 1) return;
  float* flat = flat_params_.data_ptr<float>();
  for (size_t b = 0; b < layout_.buckets().size(); ++b) {
    const auto& bucket = layout_.buckets()[b];
    float* own = flat + bucket.start + size_t(layout_.dp_rank()) * bucket.piece;
    std::memcpy(staging_.data(), own, bucket.piece * sizeof(float));
    std::fill(counts_.begin(), counts_.end(), bucket.piece);
    groups_.zero().allgather(staging_.data(), flat + bucket.start, counts_, comm::Role::kWeight,
                             kWeightKeyBase + b);
    std::memcpy(own, staging_.data(), bucket.piece * sizeof(float));
  }
}

}  // namespace cmpi::parallel
