// One identity Function for both sides: forward returns its input (autograd
// wraps it as a fresh view), backward tells the gate and passes the gradient
// through unchanged.
#include "parallel/zero/layer_gate_ops.h"

namespace cmpi::parallel {
namespace {

enum class Side : int64_t { kAfterBackward = 0, kBeforeBackward = 1 };

struct GateBoundary : torch::autograd::Function<GateBoundary> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               int64_t gate, int64_t use, int64_t side) {
    ctx->saved_data["gate"] = gate;
    ctx->saved_data["use"] = use;
    ctx->saved_data["side"] = side;
    return x;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto* gate = reinterpret_cast<LayerGate*>(ctx->saved_data["gate"].toInt());
    const auto use = size_t(ctx->saved_data["use"].toInt());
    if (Side(ctx->saved_data["side"].toInt()) == Side::kBeforeBackward)
      gate->before_backward(use);
    else
      gate->after_backward(use);
    return {grads[0], torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

bool tracked(const torch::Tensor& t) {
  return t.defined() && t.requires_grad() && torch::GradMode::is_enabled();
}

torch::Tensor boundary(LayerGate* gate, size_t use, const torch::Tensor& x, Side side) {
  return GateBoundary::apply(x, int64_t(reinterpret_cast<intptr_t>(gate)), int64_t(use),
                             int64_t(side));
}

}  // namespace

torch::Tensor enter_use(LayerGate* gate, size_t use, const torch::Tensor& input) {
  if (!gate) return input;
  gate->before_forward(use);
  return tracked(input) ? boundary(gate, use, input, Side::kAfterBackward) : input;
}

torch::Tensor leave_use(LayerGate* gate, size_t use, const torch::Tensor& output) {
  if (!gate) return output;
  gate->after_forward(use);
  return tracked(output) ? boundary(gate, use, output, Side::kBeforeBackward) : output;
}

}  // namespace cmpi::parallel
