// Causal attention computed in blocks along the key dimension with an online
// softmax (the memory-lean attention of issue 25), so that no
// [B, heads, T, T] tensor exists, in forward or in backward: peak scratch is
// a few [B, heads, T, block] tensors.
//
// Forward, for key blocks j = 0, 1, ... in order: s = q k_jᵀ / √d, masked
// above the diagonal, for the query rows from the block's first key on only
// (the rows before it see none of its keys: the parts of the [T, T] scores
// wholly in the future, about half, are never computed); the running row
// maximum m, the running sum of exp(s − m) and the running output acc are
// rescaled by exp(m_old − m_new) and the block's exp(s − m_new) (dropped
// out) · v_j added; out = acc / sum.
// It saves q, k, v, out and the rows' log-sum-exp. Backward recomputes each
// block's probabilities from the log-sum-exp, P = exp(s − lse), and with
// D = rowsum(dO ∘ out): dv_j = P̃ᵀ dO, dP = (dO v_jᵀ) ∘ mask / (1 − p),
// ds = P ∘ (dP − D), dq += ds k_j / √d, dk_j = dsᵀ q / √d (P̃: P dropped
// out). Dropout masks are drawn per block from `generator`, whose state is
// saved before the forward and set again for the backward, which draws the
// same masks in the same order (then puts the generator back).
//
// Not bit-identical to the plain path (the sums run in another order; with
// dropout the masks are other draws of the same distribution): the test
// holds outputs and gradients within 1e-5 relative of the plain path's
// (tests/models/blocked_attention_test.cpp).
#pragma once

#include <torch/torch.h>

namespace cmpi::models {

// q, k, v [B, heads, T, d] (views allowed) -> [B, heads, T, d].
// future_mask: [>= T, >= T] bool, true above the diagonal. dropout in [0, 1)
// acts only while `training`.
torch::Tensor blocked_causal_attention(const torch::Tensor& q, const torch::Tensor& k,
                                       const torch::Tensor& v, const torch::Tensor& future_mask,
                                       int64_t block, double dropout, bool training,
                                       at::Generator generator);

}  // namespace cmpi::models
