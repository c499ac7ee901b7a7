// y = x · Wᵀ (+ b) as one autograd node that saves the weight PARAMETER
// itself for backward, not a view of its storage. torch's linear/matmul save
// Wᵀ, a view that keeps the weight's storage alive until backward; per-layer
// ZeRO-3 frees a layer's gathered weights after its forward and re-gathers
// them before its backward, which only releases memory (and only reads the
// re-gathered values) if autograd holds the parameter and nothing else.
// Forward is torch::nn::functional::linear without bias, then + b; backward
// is the matmuls autograd would run: dx = dy · W, dW = dyᵀ · x (db by
// autograd: Σ dy).
//
// Mixed precision (x bfloat16 or half, W a float32 master): the weight is
// rounded to x's dtype on every use (forward and again in backward, so
// nothing but the parameter is saved), the products accumulate in float32
// (parallel/low_precision_ops.h), the bias is added in float32 and the sum
// is rounded to x's dtype once; dx likewise; dW stays float32, so the
// optimizer's float32 gradient buffer accumulates it unrounded.
#pragma once

#include <torch/torch.h>

namespace cmpi::parallel {

// x [..., in], weight [out, in], bias [out] or undefined -> [..., out], in
// x's dtype.
torch::Tensor leaf_saving_linear(const torch::Tensor& x, const torch::Tensor& weight,
                                 const torch::Tensor& bias = {});

// x · Wᵀ without rounding: float32 products whatever x's dtype (for partial
// sums that are added up before they are rounded, e.g. a row-parallel
// layer's over tp). The same node as above.
torch::Tensor leaf_saving_linear_float32(const torch::Tensor& x, const torch::Tensor& weight);

// The node's arithmetic, for nodes that keep their input another way (the
// sequence-parallel linear saves a part of it and gathers the rest again):
// x · Wᵀ as float32 products, and the gradients of x (in x's dtype) and of
// W (float32) for an output gradient dy (undefined where not wanted).
torch::Tensor linear_products(const torch::Tensor& x, const torch::Tensor& weight);
struct LinearGradients {
  torch::Tensor dx, dw;
};
LinearGradients linear_gradients(const torch::Tensor& x, const torch::Tensor& weight,
                                 const torch::Tensor& dy, bool want_dx, bool want_dw);

}  // namespace cmpi::parallel
