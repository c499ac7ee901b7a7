// sum_over_sp is an allreduce forward and backward, reduce_from_sp an
// allreduce forward and the identity backward (see sp_reductions.h);
// allreduce_spatial_gradients packs the gradients into one flat buffer so
// that a layer stack costs one collective, not one per parameter.
#include "parallel/spatial/sp_reductions.h"

#include <stdexcept>
#include <string>

namespace cmpi::parallel::spatial {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

torch::Tensor allreduced(const torch::Tensor& x, comm::Communicator& sp, comm::Role role,
                         uint64_t key) {
  if (x.scalar_type() != torch::kFloat || !x.device().is_cpu())
    throw std::invalid_argument("sum over the " + std::string(comm::to_string(sp.kind())) +
                                " group: expects a float32 CPU tensor");
  torch::Tensor out = x.detach().clone(torch::MemoryFormat::Contiguous);
  if (sp.size() > 1) sp.allreduce(out.data_ptr<float>(), size_t(out.numel()), role, key);
  return out;
}

struct SumOverSp : torch::autograd::Function<SumOverSp> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, comm::Communicator* sp,
                               int64_t key) {
    ctx->saved_data["sp"] = int64_t(reinterpret_cast<intptr_t>(sp));
    ctx->saved_data["key"] = key;
    return allreduced(x, *sp, comm::Role::kActivation, uint64_t(key));
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto* sp = reinterpret_cast<comm::Communicator*>(intptr_t(ctx->saved_data["sp"].toInt()));
    return {allreduced(grads[0], *sp, comm::Role::kActivationGrad,
                       uint64_t(ctx->saved_data["key"].toInt())),
            torch::Tensor(), torch::Tensor()};
  }
};

struct ReduceFromSp : torch::autograd::Function<ReduceFromSp> {
  static torch::Tensor forward(AutogradContext*, const torch::Tensor& x, comm::Communicator* sp,
                               int64_t key) {
    return allreduced(x, *sp, comm::Role::kActivation, uint64_t(key));
  }
  static variable_list backward(AutogradContext*, variable_list grads) {
    return {grads[0], torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor reduce_from_sp(const torch::Tensor& x, comm::Communicator& sp, uint64_t buffer_key) {
  return ReduceFromSp::apply(x, &sp, int64_t(buffer_key));
}

torch::Tensor sum_over_sp(const torch::Tensor& x, comm::Communicator& sp, uint64_t buffer_key) {
  return SumOverSp::apply(x, &sp, int64_t(buffer_key));
}

void allreduce_spatial_gradients(const std::vector<torch::Tensor>& parameters,
                                 comm::Communicator& sp, uint64_t buffer_key) {
  if (sp.size() == 1) return;
  std::vector<torch::Tensor> grads;
  for (const auto& p : parameters)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return;
  std::vector<torch::Tensor> flat;
  for (const auto& g : grads) flat.push_back(g.reshape({-1}));
  torch::Tensor buffer = torch::cat(flat).contiguous();
  sp.allreduce(buffer.data_ptr<float>(), size_t(buffer.numel()), comm::Role::kGradient, buffer_key);
  int64_t offset = 0;
  for (auto& g : grads) {
    g.copy_(buffer.narrow(0, offset, g.numel()).view(g.sizes()));
    offset += g.numel();
  }
}

}  // namespace cmpi::parallel::spatial
