// Mixed-precision arithmetic on 16-bit activations (bfloat16 or half) with
// float32 weights, as a GPU's tensor cores and fused kernels do it: every
// product of two matrices takes 16-bit inputs and accumulates in float32;
// what it returns is rounded to the 16-bit type once (activations, their
// gradients) or kept in float32 (weight gradients, which accumulate into the
// optimizer's float32 buffer). The CPU arithmetic here is float32 on inputs
// widened exactly from 16 bits, so results equal a float32-accumulating
// 16-bit GEMM up to the order of the sums; LibTorch 1.13 has no half matmul
// on the CPU and a bfloat16 one ~14x slower than float32 on this machine's.
//
// Each function follows its input's dtype: a float32 input takes the plain
// float32 path unchanged (the same LibTorch kernels as before mixed
// precision), so float32 runs stay bit for bit what they were. The float32
// scaled_causal_softmax is one autograd node over those kernels that masks
// and scales in place (autograd's three nodes would copy the [B, heads, T, T]
// tensor for the mask and allocate one per node, forward and backward).
//
// Which ops run in float32 under a 16-bit compute dtype (as Megatron-LM's
// and GPT-NeoX's fused kernels do): LayerNorm (statistics and affine),
// softmax of the attention scores (scaling and the causal mask included),
// GeLU, rotary embeddings, dropout, the cross-entropy (on float32 logits) and
// every bias add; each result is rounded to the compute dtype. Residual adds
// run in the compute dtype.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <string>

namespace cmpi::parallel {

// True for bfloat16 and half.
bool is_low_precision(const torch::Tensor& x);

// a [..., n, k] · b [..., k, m] (same batch dims) in a's dtype: float32 as
// torch::matmul; 16-bit (a and b the same type): float32 products of the
// widened inputs, rounded once. Autograd saves the 16-bit inputs only, and
// the input gradients are computed the same way (16-bit in, float32
// accumulation, rounded).
torch::Tensor mixed_matmul(const torch::Tensor& a, const torch::Tensor& b);

// The three ops that keep activations for backward, in float32 on a 16-bit
// input, keeping only 16-bit tensors (and LayerNorm's per-token float32 mean
// and 1/std) for backward as the fused kernels do, so that a 16-bit run's
// activations take half a float32 run's bytes. Each is the plain float32 op
// for a float32 input.
//   scaled_causal_softmax  softmax over the last dim of scores / divisor with
//                          future positions (column > row) masked; keeps the
//                          16-bit result (backward: y ⊙ (g − Σ g ⊙ y) / divisor);
//   gelu                   "none" (erf) or "tanh"; keeps the 16-bit input;
//   layer_norm             over the last dim with float32 weight and bias
//                          (parameters, kept as themselves: ZeRO-3 re-gathers).
// `future`: the [rows, cols] bool mask (true: masked), built once per model
// rather than per forward.
torch::Tensor scaled_causal_softmax(const torch::Tensor& scores, double divisor,
                                    const torch::Tensor& future);
torch::Tensor gelu(const torch::Tensor& x, const std::string& approximate);
torch::Tensor layer_norm(const torch::Tensor& x, const torch::Tensor& weight,
                         const torch::Tensor& bias, double eps);

// fn(x) computed in float32 and rounded back to x's dtype (x as is when it is
// float32): the other float32 ops listed above (rotary, dropout).
torch::Tensor in_float32(const torch::Tensor& x,
                         const std::function<torch::Tensor(const torch::Tensor&)>& fn);

}  // namespace cmpi::parallel
