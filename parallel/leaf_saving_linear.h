// y = x · Wᵀ (+ b) as one autograd node that saves the weight PARAMETER
// itself for backward, not a view of its storage. torch's linear/matmul save
// Wᵀ, a view that keeps the weight's storage alive until backward; per-layer
// ZeRO-3 frees a layer's gathered weights after its forward and re-gathers
// them before its backward, which only releases memory (and only reads the
// re-gathered values) if autograd holds the parameter and nothing else.
// Forward is torch::nn::functional::linear without bias, then + b; backward
// is the matmuls autograd would run: dx = dy · W, dW = dyᵀ · x (db by
// autograd: Σ dy).
#pragma once

#include <torch/torch.h>

namespace cmpi::parallel {

// x [..., in], weight [out, in], bias [out] or undefined -> [..., out].
torch::Tensor leaf_saving_linear(const torch::Tensor& x, const torch::Tensor& weight,
                                 const torch::Tensor& bias = {});

}  // namespace cmpi::parallel
