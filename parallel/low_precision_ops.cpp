// mixed_matmul is a custom autograd Function so that backward keeps the two
// 16-bit inputs and nothing wider (autograd through .to(float) would save
// float32 copies and double the activation memory the 16-bit types save).
#include "parallel/low_precision_ops.h"

#include <limits>
#include <stdexcept>
#include <string>

namespace cmpi::parallel {
namespace {

struct MixedMatmul : torch::autograd::Function<MixedMatmul> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& a,
                               const torch::Tensor& b) {
    ctx->save_for_backward({a, b});
    return torch::matmul(a.to(torch::kFloat), b.to(torch::kFloat)).to(a.scalar_type());
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& a = saved[0];
    const auto& b = saved[1];
    const auto dy = grads[0].to(torch::kFloat);
    torch::Tensor da, db;
    if (ctx->needs_input_grad(0))
      da = torch::matmul(dy, b.to(torch::kFloat).transpose(-2, -1)).to(a.scalar_type());
    if (ctx->needs_input_grad(1))
      db = torch::matmul(a.to(torch::kFloat).transpose(-2, -1), dy).to(b.scalar_type());
    return {da, db};
  }
};

// The float32 result keeps nothing; the 16-bit one is what backward reads.
struct ScaledCausalSoftmax : torch::autograd::Function<ScaledCausalSoftmax> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& scores,
                               double divisor, const torch::Tensor& future) {
    const auto y = torch::softmax((scores.to(torch::kFloat) / divisor)
                                      .masked_fill(future, -std::numeric_limits<float>::infinity()),
                                  -1);
    auto rounded = y.to(scores.scalar_type());
    ctx->save_for_backward({rounded});
    ctx->saved_data["divisor"] = divisor;
    return rounded;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto rounded = ctx->get_saved_variables()[0];
    const double divisor = ctx->saved_data["divisor"].toDouble();
    const auto y = rounded.to(torch::kFloat);
    const auto g = grads[0].to(torch::kFloat);
    const auto dx = y * (g - (g * y).sum(-1, /*keepdim=*/true)) / divisor;
    return {dx.to(rounded.scalar_type()), torch::Tensor(), torch::Tensor()};
  }
};

// The float32 op: the same LibTorch kernels autograd would run for
// softmax((scores / divisor).masked_fill(future, -inf)), in the same order, so
// the results are bit for bit those of the plain expression; but the scaled
// scores are masked in place and backward writes the mask and the scaling
// into the softmax gradient in place, where autograd would copy the
// [B, heads, T, T] tensor for the masked_fill and allocate one for each of
// its three nodes.
struct ScaledCausalSoftmaxFloat32 : torch::autograd::Function<ScaledCausalSoftmaxFloat32> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& scores,
                               double divisor, const torch::Tensor& future) {
    auto masked = (scores / divisor).masked_fill_(future, -std::numeric_limits<float>::infinity());
    auto y = at::_softmax(masked, -1, /*half_to_float=*/false);
    ctx->save_for_backward({y, future});
    ctx->saved_data["divisor"] = divisor;
    return y;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const double divisor = ctx->saved_data["divisor"].toDouble();
    auto dx = at::_softmax_backward_data(grads[0], saved[0], -1, saved[0].scalar_type());
    dx.masked_fill_(saved[1], 0.0).div_(divisor);
    return {dx, torch::Tensor(), torch::Tensor()};
  }
};

struct Gelu : torch::autograd::Function<Gelu> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const std::string& approximate) {
    ctx->save_for_backward({x});
    ctx->saved_data["approximate"] = approximate;
    return torch::gelu(x.to(torch::kFloat), approximate).to(x.scalar_type());
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto x = ctx->get_saved_variables()[0];
    const auto approximate = ctx->saved_data["approximate"].toStringRef();
    const auto dx = at::gelu_backward(grads[0].to(torch::kFloat), x.to(torch::kFloat), approximate);
    return {dx.to(x.scalar_type()), torch::Tensor()};
  }
};

struct LayerNorm : torch::autograd::Function<LayerNorm> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& bias, double eps) {
    const auto [y, mean, rstd] =
        at::native_layer_norm(x.to(torch::kFloat), {x.size(-1)}, weight, bias, eps);
    ctx->save_for_backward({x, weight, bias, mean, rstd});
    return y.to(x.scalar_type());
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& x = saved[0];
    const auto [dx, dweight, dbias] = at::native_layer_norm_backward(
        grads[0].to(torch::kFloat), x.to(torch::kFloat), {x.size(-1)}, saved[3], saved[4], saved[1],
        saved[2], {true, ctx->needs_input_grad(1), ctx->needs_input_grad(2)});
    return {dx.to(x.scalar_type()), dweight, dbias, torch::Tensor()};
  }
};

}  // namespace

torch::Tensor scaled_causal_softmax(const torch::Tensor& scores, double divisor,
                                    const torch::Tensor& future) {
  if (is_low_precision(scores)) return ScaledCausalSoftmax::apply(scores, divisor, future);
  return ScaledCausalSoftmaxFloat32::apply(scores, divisor, future);
}

torch::Tensor gelu(const torch::Tensor& x, const std::string& approximate) {
  if (is_low_precision(x)) return Gelu::apply(x, approximate);
  return torch::gelu(x, approximate);
}

torch::Tensor layer_norm(const torch::Tensor& x, const torch::Tensor& weight,
                         const torch::Tensor& bias, double eps) {
  if (is_low_precision(x)) return LayerNorm::apply(x, weight, bias, eps);
  return torch::layer_norm(x, {x.size(-1)}, weight, bias, eps);
}

bool is_low_precision(const torch::Tensor& x) {
  return x.scalar_type() == torch::kBFloat16 || x.scalar_type() == torch::kHalf;
}

torch::Tensor mixed_matmul(const torch::Tensor& a, const torch::Tensor& b) {
  if (!is_low_precision(a)) return torch::matmul(a, b);
  if (b.scalar_type() != a.scalar_type() || a.dim() < 2 || b.dim() != a.dim())
    throw std::invalid_argument(
        "mixed_matmul: expects two tensors of one 16-bit dtype and rank, "
        "got " +
        c10::str(a.scalar_type(), a.sizes()) + " and " + c10::str(b.scalar_type(), b.sizes()));
  return MixedMatmul::apply(a, b);
}

torch::Tensor in_float32(const torch::Tensor& x,
                         const std::function<torch::Tensor(const torch::Tensor&)>& fn) {
  if (!is_low_precision(x)) return fn(x);
  return fn(x.to(torch::kFloat)).to(x.scalar_type());
}

}  // namespace cmpi::parallel
