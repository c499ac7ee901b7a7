// A custom autograd Function for x · Wᵀ: inputs that are leaves (the
// parameters) are saved as the variables themselves, so unpacking in
// backward reads whatever storage the parameter has then (the re-gathered
// layer under ZeRO-3). The bias is added after it by plain autograd.
#include "parallel/leaf_saving_linear.h"

namespace cmpi::parallel {
namespace {

struct LeafSavingLinear : torch::autograd::Function<LeafSavingLinear> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight) {
    ctx->save_for_backward({x, weight});
    return torch::nn::functional::linear(x, weight);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& x = saved[0];
    const auto& weight = saved[1];
    const auto& dy = grads[0];
    const int64_t out = weight.size(0), in = weight.size(1);
    torch::Tensor dx, dw;
    if (ctx->needs_input_grad(0)) dx = torch::matmul(dy, weight);
    if (ctx->needs_input_grad(1)) dw = dy.reshape({-1, out}).t().mm(x.reshape({-1, in}));
    return {dx, dw};
  }
};

}  // namespace

torch::Tensor leaf_saving_linear(const torch::Tensor& x, const torch::Tensor& weight,
                                 const torch::Tensor& bias) {
  // The bias outside the node: its gradient (a sum) reads no saved weight,
  // and an undefined tensor cannot be a custom Function's input.
  auto y = LeafSavingLinear::apply(x, weight);
  return bias.defined() ? y + bias : y;
}

}  // namespace cmpi::parallel
