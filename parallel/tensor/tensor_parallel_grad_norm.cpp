// Squared norms accumulate in double, sharded and replicated apart; only the
// sharded sum travels (one float allreduce over tp).
#include "parallel/tensor/tensor_parallel_grad_norm.h"

#include <cmath>

namespace cmpi::parallel {

double tensor_parallel_grad_norm(const std::vector<ParamInfo>& params, comm::Communicator& tp) {
  double sharded = 0, replicated = 0;
  for (const auto& p : params) {
    const auto& grad = p.tensor.grad();
    if (!grad.defined()) continue;
    const double squares = grad.to(torch::kDouble).pow(2).sum().item<double>();
    (p.tensor_parallel ? sharded : replicated) += squares;
  }
  if (tp.size() > 1) {
    float total = float(sharded);
    tp.allreduce(&total, 1, comm::Role::kOther);
    sharded = double(total);
  }
  return std::sqrt(sharded + replicated);
}

double clip_tensor_parallel_grad_norm(const std::vector<ParamInfo>& params, double max_norm,
                                      comm::Communicator& tp) {
  const double norm = tensor_parallel_grad_norm(params, tp);
  const double scale = max_norm / (norm + 1e-6);
  if (scale < 1.0) {
    torch::NoGradGuard no_grad;
    for (const auto& p : params)
      if (p.tensor.grad().defined()) p.tensor.grad().mul_(scale);
  }
  return norm;
}

}  // namespace cmpi::parallel
