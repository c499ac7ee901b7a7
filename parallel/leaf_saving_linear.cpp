// A custom autograd Function: inputs that are leaves (the parameters) are
// saved as the variables themselves, so unpacking in backward reads whatever
// storage the parameter has then (the re-gathered layer under ZeRO-3).
#include "parallel/leaf_saving_linear.h"

namespace cmpi::parallel {
namespace {

struct LeafSavingLinear : torch::autograd::Function<LeafSavingLinear> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& bias) {
    ctx->save_for_backward({x, weight});
    ctx->saved_data["has_bias"] = bias.defined();
    return torch::nn::functional::linear(x, weight, bias);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& x = saved[0];
    const auto& weight = saved[1];
    const auto& dy = grads[0];
    const int64_t out = weight.size(0), in = weight.size(1);
    torch::Tensor dx, dw, db;
    if (ctx->needs_input_grad(0)) dx = torch::matmul(dy, weight);
    const auto dy2 = dy.reshape({-1, out});
    if (ctx->needs_input_grad(1)) dw = dy2.t().mm(x.reshape({-1, in}));
    if (ctx->saved_data["has_bias"].toBool() && ctx->needs_input_grad(2)) db = dy2.sum(0);
    return {dx, dw, db};
  }
};

}  // namespace

torch::Tensor leaf_saving_linear(const torch::Tensor& x, const torch::Tensor& weight,
                                 const torch::Tensor& bias) {
  return LeafSavingLinear::apply(x, weight, bias);
}

}  // namespace cmpi::parallel
