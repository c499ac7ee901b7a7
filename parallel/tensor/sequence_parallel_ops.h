// Sequence parallelism's region changes (Megatron-SP), as autograd functions
// over the tp group's Communicator. With parallel.sequence_parallel the
// parts of a transformer outside the tensor-parallel layers (LayerNorms,
// dropout, residual adds, the embedding's output) hold only this tp rank's
// 1/tp of the sequence, [B, T/tp, H], instead of the whole [B, T, H]
// replicated on every tp rank. The sequence is dim 1 ([batch, time, ...]);
// rank r holds positions [r*T/tp, (r+1)*T/tp).
//
//   sequence_gathered_linear          forward: allgather along the sequence,
//                                     then x · Wᵀ (+ b) on the whole of it
//                                     backward: allgather again, the linear's
//                                     gradients, reduce-scatter of dx
//       a column-parallel linear (and the vocab-parallel head) reading a
//       sequence region: each rank's input gradient is a partial sum over its
//       output features. Only this rank's part of the input is kept for
//       backward (the weight gradient needs the whole input, so it is
//       gathered a second time, as Megatron-SP does), which is what makes the
//       LayerNorms' outputs 1/tp of their size between forward and backward.
//   reduce_scatter_to_sequence_region forward: reduce-scatter along the sequence
//                                     backward: allgather along it
//       after a row-parallel linear (and the vocab-parallel embedding), in
//       place of the allreduce: each rank keeps the sum of its positions only.
//   sum_gradient_over_tp              forward: a copy of the parameter
//                                     backward: the gradient summed over tp
//       on every parameter used in a sequence region (LayerNorm weights and
//       biases, the row-parallel biases, the position table): each rank's
//       gradient covers its positions only. The sum is Communicator::
//       exact_allreduce (lossless, no policy, the same bits on every tp
//       rank), so the replicas stay bit-identical, as ZeRO's buckets and the
//       replica checks require (docs/policy.md, "Replicated parameters").
//       The copy (a few floats: LayerNorm's) keeps autograd from saving a
//       view of a per-layer ZeRO-3 gathered buffer, which would keep the
//       whole unit alive until backward.
//
// Forward traffic names comm::Role::kActivation and backward traffic
// kActivationGrad (as tensor_parallel_ops.h), so the policy and the
// compressed ring algorithms treat the allgathers and reduce-scatters like
// today's tp allreduces. Each travels in the dtype it is given: 16-bit
// tensors as 16-bit words (parallel/tensor_words.h), a reduce-scatter of
// them summed in float32 and rounded once per reduction step. With one tp rank nothing is
// sent. The sequence length must be divisible by the tp size
// (std::invalid_argument otherwise; the config loader refuses such a config
// first, at parallel.sequence_parallel).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <utility>

#include "comm/communicator.h"

namespace cmpi::parallel {

// x [B, T/tp, in] (this rank's positions), weight [out, in] (a parameter,
// saved as itself: see leaf_saving_linear.h), bias [out] or undefined ->
// [B, T, out] in x's dtype (float32 products, rounded once).
torch::Tensor sequence_gathered_linear(const torch::Tensor& x, const torch::Tensor& weight,
                                       const torch::Tensor& bias, comm::Communicator& tp,
                                       uint64_t buffer_key = 0);
// Two such linears reading the same x (a gated MLP's up and gate
// projections): x is gathered once in forward and once in backward, and the
// two input gradients are summed before one reduce-scatter.
std::pair<torch::Tensor, torch::Tensor> sequence_gathered_linear_pair(
    const torch::Tensor& x, const torch::Tensor& weight_a, const torch::Tensor& bias_a,
    const torch::Tensor& weight_b, const torch::Tensor& bias_b, comm::Communicator& tp,
    uint64_t buffer_key = 0);
torch::Tensor reduce_scatter_to_sequence_region(const torch::Tensor& x, comm::Communicator& tp,
                                                uint64_t buffer_key = 0);
torch::Tensor sum_gradient_over_tp(const torch::Tensor& parameter, comm::Communicator& tp);

// Positions [first, first + count) of a sequence of `length` that this tp
// rank holds in a sequence region.
struct SequenceShard {
  int64_t first = 0;
  int64_t count = 0;
};
// Throws std::invalid_argument when `length` is not divisible by tp's size.
SequenceShard sequence_shard(int64_t length, const comm::Communicator& tp);

// Plain (non-autograd) collectives the functions above are made of.
torch::Tensor tp_allgather_sequence(const torch::Tensor& x, comm::Communicator& tp, comm::Role role,
                                    uint64_t buffer_key = 0);
torch::Tensor tp_reduce_scatter_sequence(const torch::Tensor& x, comm::Communicator& tp,
                                         comm::Role role, uint64_t buffer_key = 0);

}  // namespace cmpi::parallel
