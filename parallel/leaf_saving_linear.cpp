// A custom autograd Function for x · Wᵀ: inputs that are leaves (the
// parameters) are saved as the variables themselves, so unpacking in
// backward reads whatever storage the parameter has then (the re-gathered
// layer under ZeRO-3). The bias is added after it by plain autograd.
// A 16-bit x keeps x (16-bit) and the float32 parameter; the weight's 16-bit
// rounding is recomputed in backward rather than saved.
#include "parallel/leaf_saving_linear.h"

#include "parallel/low_precision_ops.h"

namespace cmpi::parallel {
namespace {

// The float32 weight rounded to x's 16-bit type and widened back (exact).
torch::Tensor rounded_like(const torch::Tensor& weight, const torch::Tensor& x) {
  return weight.to(x.scalar_type()).to(torch::kFloat);
}

struct LeafSavingLinear : torch::autograd::Function<LeafSavingLinear> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight) {
    ctx->save_for_backward({x, weight});
    return linear_products(x, weight);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    auto gradients = linear_gradients(saved[0], saved[1], grads[0], ctx->needs_input_grad(0),
                                      ctx->needs_input_grad(1));
    return {gradients.dx, gradients.dw};
  }
};

// a [M, K] · b [K, N] of one 16-bit dtype with float32 accumulation and a
// float32 result: on a CUDA device one 16-bit GEMM (the tensor cores);
// elsewhere a float32 GEMM of the exactly widened inputs (LibTorch's CPU
// GEMMs have no 16-bit-in, float32-out form).
torch::Tensor mm_float32_out(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.is_cuda()) return at::mm(a, b, torch::kFloat);
  return torch::mm(a.to(torch::kFloat), b.to(torch::kFloat));
}

}  // namespace

torch::Tensor linear_products(const torch::Tensor& x, const torch::Tensor& weight) {
  if (!is_low_precision(x)) return torch::nn::functional::linear(x, weight);
  // Float32 products of 16-bit inputs (see low_precision_ops.h).
  if (!x.is_cuda())
    return torch::nn::functional::linear(x.to(torch::kFloat), rounded_like(weight, x));
  auto shape = x.sizes().vec();
  shape.back() = weight.size(0);
  return mm_float32_out(x.reshape({-1, x.size(-1)}), weight.to(x.scalar_type()).t()).view(shape);
}

LinearGradients linear_gradients(const torch::Tensor& x, const torch::Tensor& weight,
                                 const torch::Tensor& dy, bool want_dx, bool want_dw) {
  const int64_t out = weight.size(0), in = weight.size(1);
  LinearGradients g;
  if (!is_low_precision(x)) {
    if (want_dx) g.dx = torch::matmul(dy, weight);
    if (want_dw) g.dw = dy.reshape({-1, out}).t().mm(x.reshape({-1, in}));
    return g;
  }
  if (x.is_cuda()) {
    // The same products as below, each one 16-bit GEMM with float32 output.
    const auto dy16 = dy.to(x.scalar_type()).reshape({-1, out});
    if (want_dx)
      g.dx = mm_float32_out(dy16, weight.to(x.scalar_type())).to(x.scalar_type()).view(x.sizes());
    if (want_dw) g.dw = mm_float32_out(dy16.t(), x.reshape({-1, in}));
    return g;
  }
  // The output gradient as a 16-bit kernel receives it, widened exactly.
  const auto widened = dy.to(x.scalar_type()).to(torch::kFloat);
  if (want_dx) g.dx = torch::matmul(widened, rounded_like(weight, x)).to(x.scalar_type());
  if (want_dw) g.dw = widened.reshape({-1, out}).t().mm(x.to(torch::kFloat).reshape({-1, in}));
  return g;
}

torch::Tensor leaf_saving_linear_float32(const torch::Tensor& x, const torch::Tensor& weight) {
  return LeafSavingLinear::apply(x, weight);
}

torch::Tensor leaf_saving_linear(const torch::Tensor& x, const torch::Tensor& weight,
                                 const torch::Tensor& bias) {
  // The bias outside the node: its gradient (a sum) reads no saved weight,
  // and an undefined tensor cannot be a custom Function's input.
  auto y = LeafSavingLinear::apply(x, weight);
  if (bias.defined()) y = y + bias;
  // 16-bit x: the float32 sum (bias included) rounded once.
  return y.to(x.scalar_type());
}

}  // namespace cmpi::parallel
