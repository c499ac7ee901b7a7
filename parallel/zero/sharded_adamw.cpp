#include "parallel/zero/sharded_adamw.h"

#include <ATen/ops/_foreach_add.h>
#include <ATen/ops/_foreach_addcdiv.h>
#include <ATen/ops/_foreach_addcmul.h>
#include <ATen/ops/_foreach_div.h>
#include <ATen/ops/_foreach_mul.h>
#include <ATen/ops/_foreach_norm.h>
#include <ATen/ops/_foreach_sqrt.h>

#include <cmath>
#include <stdexcept>

#include "comm/communicator.h"
#include "parallel/mesh/process_groups.h"

namespace cmpi::parallel {
namespace {

double sum_of_squares(const float* data, size_t n) {
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += double(data[i]) * double(data[i]);
  return sum;
}

size_t run_offset(RunAddress address, const ZeroSegment& run) {
  return address == RunAddress::kShard ? run.shard_offset : run.flat_offset;
}

}  // namespace

ShardedAdamW::ShardedAdamW(const AdamWOptions& options, const ZeroLayout& layout,
                           std::vector<ZeroSegment> runs, size_t state_size,
                           const torch::TensorOptions& state_options, Kernels kernels)
    : options_(options), layout_(layout), runs_(std::move(runs)), kernels_(kernels) {
  validate(options_);
  const auto state = state_options.dtype(torch::kFloat);
  exp_avg_ = torch::zeros({int64_t(state_size)}, state);
  exp_avg_sq_ = torch::zeros({int64_t(state_size)}, state);
  for (const auto& run : runs_)
    if (run.shard_offset + run.length > state_size)
      throw std::logic_error("ShardedAdamW: a run ends past the optimizer state");
}

bool ShardedAdamW::host_loops(const torch::Tensor& buffer) const {
  if (kernels_ != Kernels::kAuto) return kernels_ == Kernels::kHostLoops;
  return buffer.device().is_cpu() && buffer.scalar_type() == torch::kFloat &&
         buffer.is_contiguous();
}

torch::Tensor ShardedAdamW::run_view(const torch::Tensor& buffer, RunAddress address,
                                     const ZeroSegment& run) {
  return buffer.narrow(0, int64_t(run_offset(address, run)), int64_t(run.length));
}

double ShardedAdamW::global_norm(const StepBuffer& grads, const std::vector<ZeroSegment>& runs,
                                 bool sum_over_zero, ProcessGroups& groups) const {
  double tensor_parallel = 0, replicated = 0;
  if (host_loops(grads.data)) {
    const float* data = grads.data.data_ptr<float>();
    for (const auto& run : runs) {
      const auto& param = layout_.params()[run.param];
      if (param.counted_on_other_stage) continue;
      const double squares = sum_of_squares(data + run_offset(grads.address, run), run.length);
      (param.tensor_parallel ? tensor_parallel : replicated) += squares;
    }
  } else {
    // One norm per run in one multi-tensor call, squared and split in two
    // sums on the tensors' device: a single copy to the host at the end.
    std::vector<torch::Tensor> views;
    std::vector<double> on_tp;
    for (const auto& run : runs) {
      const auto& param = layout_.params()[run.param];
      if (param.counted_on_other_stage) continue;
      views.push_back(run_view(grads.data, grads.address, run));
      on_tp.push_back(param.tensor_parallel ? 1.0 : 0.0);
    }
    if (!views.empty()) {
      const auto squares = torch::stack(at::_foreach_norm(views, 2)).to(torch::kDouble).square();
      const auto tp_mask = torch::tensor(on_tp, torch::kDouble).to(squares.device());
      const auto sums =
          torch::stack({(squares * tp_mask).sum(), (squares * (1 - tp_mask)).sum()}).cpu();
      tensor_parallel = sums[0].item<double>();
      replicated = sums[1].item<double>();
    }
  }
  if (sum_over_zero && groups.zero().size() > 1) {
    float sums[2] = {float(tensor_parallel), float(replicated)};
    groups.zero().allreduce(sums, 2, comm::Role::kOther);
    tensor_parallel = sums[0];
    replicated = sums[1];
  }
  if (groups.tp().size() > 1) {
    float sum = float(tensor_parallel);
    groups.tp().allreduce(&sum, 1, comm::Role::kOther);
    tensor_parallel = sum;
  }
  double total = tensor_parallel + replicated;
  if (groups.pp().size() > 1) {
    float sum = float(total);
    groups.pp().allreduce(&sum, 1, comm::Role::kOther);
    total = sum;
  }
  return std::sqrt(total);
}

void ShardedAdamW::scale(torch::Tensor& grads, float factor) const {
  if (!host_loops(grads)) {
    grads.mul_(factor);
    return;
  }
  float* data = grads.data_ptr<float>();
  const int64_t n = grads.numel();
  for (int64_t i = 0; i < n; ++i) data[i] *= factor;
}

void ShardedAdamW::update(double lr, const StepBuffer& params, const StepBuffer& grads) {
  ++steps_;
  const AdamWStep step(options_, lr, steps_);
  if (host_loops(params.data) && host_loops(grads.data) && host_loops(exp_avg_)) {
    float* p = params.data.data_ptr<float>();
    const float* g = grads.data.data_ptr<float>();
    float* m = exp_avg_.data_ptr<float>();
    float* v = exp_avg_sq_.data_ptr<float>();
    for (const auto& run : runs_)
      adamw_update(step, layout_.params()[run.param].weight_decay,
                   p + run_offset(params.address, run), g + run_offset(grads.address, run),
                   m + run.shard_offset, v + run.shard_offset, run.length);
    return;
  }
  // The same formula (adamw.h) as multi-tensor operations over every run:
  //   p ← p·decay;  m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²;
  //   p ← p − step_size · m / (√v / √(1−β2^t) + eps)
  // The scalars are the loop's float constants; rounding may differ from the
  // loop's in the last bit (operation order inside the kernels).
  std::vector<torch::Tensor> p, g, m, v;
  std::vector<at::Scalar> decay;
  for (const auto& run : runs_) {
    p.push_back(run_view(params.data, params.address, run));
    g.push_back(run_view(grads.data, grads.address, run));
    m.push_back(run_view(exp_avg_, RunAddress::kShard, run));
    v.push_back(run_view(exp_avg_sq_, RunAddress::kShard, run));
    decay.emplace_back(double(layout_.params()[run.param].weight_decay ? step.decay_factor : 1.0f));
  }
  if (p.empty()) return;
  at::_foreach_mul_(p, decay);
  at::_foreach_mul_(m, double(step.beta1));
  at::_foreach_add_(m, g, double(step.one_minus_beta1));
  at::_foreach_mul_(v, double(step.beta2));
  at::_foreach_addcmul_(v, g, g, double(step.one_minus_beta2));
  auto denominators = at::_foreach_sqrt(v);
  at::_foreach_div_(denominators, double(float(step.bias_correction2_sqrt)));
  at::_foreach_add_(denominators, double(step.eps));
  at::_foreach_addcdiv_(p, m, denominators, -double(step.step_size));
}

}  // namespace cmpi::parallel
