// Reductions over the sp group that spatial layers need.
//
// sum_over_sp: an autograd allreduce (sum) for values every tile contributes
// to and every tile reads, such as BatchNorm's per-channel sums. Its backward
// is again an allreduce: the total loss is the sum of every tile's part, so
// the gradient of one rank's contribution is the sum of all ranks' gradients
// of the reduced value. Forward names role `activation`, backward
// `activation_grad`.
//
// reduce_from_sp: an autograd allreduce (sum) whose backward is the
// identity, for a value whose consumers are replicated over sp (every rank
// computes the same thing from it, e.g. the classifier after a global
// pool): each rank then holds the same, whole gradient of the reduced value,
// which is also the gradient of its own contribution (Megatron's
// reduce_from_tp_region). Parameters of such a replicated tail get whole,
// equal gradients on every sp rank: do not sum them over sp.
//
// allreduce_spatial_gradients: spatial layers replicate their parameters on
// every sp rank, and each rank's backward leaves only its tile's contribution
// in .grad. The caller sums them over sp with this function (before the dp
// reduction, which then sums over dp as for any replicated parameter), once
// per step after backward. One allreduce over a flat buffer, role `gradient`.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "comm/communicator.h"

namespace cmpi::parallel::spatial {

torch::Tensor sum_over_sp(const torch::Tensor& x, comm::Communicator& sp, uint64_t buffer_key = 0);

torch::Tensor reduce_from_sp(const torch::Tensor& x, comm::Communicator& sp,
                             uint64_t buffer_key = 0);

// Sums .grad of every parameter that has one over sp, in place. Every rank
// must pass the same parameters in the same order, with gradients of the
// same shapes (or all without one).
void allreduce_spatial_gradients(const std::vector<torch::Tensor>& parameters,
                                 comm::Communicator& sp, uint64_t buffer_key = 0);

}  // namespace cmpi::parallel::spatial
