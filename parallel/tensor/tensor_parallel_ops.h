// The conjugate communication pairs of Megatron-style tensor parallelism,
// as autograd functions over the tp group's Communicator:
//
//   copy_to_tp_region      forward: identity         backward: allreduce (sum)
//   reduce_from_tp_region  forward: allreduce (sum)  backward: identity
//   gather_from_tp_region  forward: allgather along the last dim, rank-major
//                          backward: keep this rank's slice of the last dim
//   scatter_to_tp_region   forward: keep this rank's slice of the last dim
//                          backward: allgather along the last dim
//
// Forward traffic names comm::Role::kActivation, backward traffic
// kActivationGrad, so the policy can treat them apart. Every rank of the tp
// group must call the same function on tensors of the same shape, and run
// backward over the same graph (the CPU autograd engine then visits the
// nodes in the same order on every rank). With one tp rank nothing is sent.
// Tensors are float32 on the CPU; anything else is rejected with an error.
// `buffer_key` gives a call site its own error-feedback residual.
#pragma once

#include <torch/torch.h>

#include <cstdint>

#include "comm/communicator.h"

namespace cmpi::parallel {

torch::Tensor copy_to_tp_region(const torch::Tensor& x, comm::Communicator& tp,
                                uint64_t buffer_key = 0);
torch::Tensor reduce_from_tp_region(const torch::Tensor& x, comm::Communicator& tp,
                                    uint64_t buffer_key = 0);
torch::Tensor gather_from_tp_region(const torch::Tensor& x, comm::Communicator& tp,
                                    uint64_t buffer_key = 0);
// The last dim of x must be divisible by the tp group's size.
torch::Tensor scatter_to_tp_region(const torch::Tensor& x, comm::Communicator& tp,
                                   uint64_t buffer_key = 0);

// Plain (non-autograd) helpers the functions above are made of; exposed for
// other tensor-parallel code that communicates outside autograd.
torch::Tensor tp_allreduce_sum(const torch::Tensor& x, comm::Communicator& tp, comm::Role role,
                               uint64_t buffer_key = 0);
// The concatenation along `dim` (0 <= dim < x.dim()) of every tp rank's x
// (same shape on every rank), in rank order; 16-bit tensors travel as
// 16-bit words, `what` names the call in errors. The last-dim and the
// sequence-parallel allgathers are this along their dimension.
torch::Tensor tp_allgather_along(const torch::Tensor& x, int64_t dim, comm::Communicator& tp,
                                 comm::Role role, uint64_t buffer_key, const char* what);
torch::Tensor tp_allgather_last_dim(const torch::Tensor& x, comm::Communicator& tp, comm::Role role,
                                    uint64_t buffer_key = 0);
torch::Tensor tp_own_slice_last_dim(const torch::Tensor& x, const comm::Communicator& tp);

}  // namespace cmpi::parallel
