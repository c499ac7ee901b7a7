// Cross-entropy over logits whose vocabulary is split across the tp group:
// rank r holds logits [..., V/tp] for the token ids [r*V/tp, (r+1)*V/tp).
// No rank ever holds the full logits; only three numbers per token cross the
// group (see the .cpp). The backward pass gives each rank
// (softmax - one_hot(target)) on its own slice, scaled by the incoming grad.
#pragma once

#include <torch/torch.h>

#include <cstdint>

#include "comm/communicator.h"

namespace cmpi::parallel {

// Per-token losses, shaped like `targets` (int64 ids in [0, V), V = tp x the
// last dim of `logits_shard`, or vocab_size when given: the rows past it are
// padding, whose logits the caller made -inf). Every rank of the tp group
// gets the same values. Throws std::invalid_argument for a target outside the vocabulary
// or shapes that do not match (every rank sees the same targets, so all
// throw together).
torch::Tensor vocab_parallel_cross_entropy(const torch::Tensor& logits_shard,
                                           const torch::Tensor& targets, comm::Communicator& tp,
                                           uint64_t buffer_key = 0, int64_t vocab_size = -1);

}  // namespace cmpi::parallel
