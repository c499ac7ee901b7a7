// Global gradient norm of a tensor-parallel model, and clipping by it.
// Replicated parameters (LayerNorm, row-parallel biases, position table)
// carry the same gradient on every tp rank and count once; tensor-parallel
// shards are disjoint pieces of one gradient, so their squared norms are
// summed over the tp group:
//   norm² = Σ_tp (Σ sharded ‖g‖²) + Σ replicated ‖g‖².
// One scalar allreduce over tp (role `other`); nothing with one tp rank.
#pragma once

#include <vector>

#include "comm/communicator.h"
#include "parallel/param_info.h"

namespace cmpi::parallel {

// Parameters without a gradient count as zero. Collective over `tp`.
double tensor_parallel_grad_norm(const std::vector<ParamInfo>& params, comm::Communicator& tp);

// Scales every gradient by max_norm / (norm + 1e-6) when that is below 1
// (as torch::nn::utils::clip_grad_norm_ does); returns the norm before
// clipping. Collective over `tp`.
double clip_tensor_parallel_grad_norm(const std::vector<ParamInfo>& params, double max_norm,
                                      comm::Communicator& tp);

}  // namespace cmpi::parallel
