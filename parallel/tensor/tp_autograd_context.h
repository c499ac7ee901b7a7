// What the tensor- and sequence-parallel autograd functions share
// (tensor_parallel_ops.cpp, sequence_parallel_ops.cpp): AutogradContext's
// saved_data only holds IValues, so a function remembers its tp group by
// address (an integer) beside its buffer key; ProcessGroups owns the group
// and outlives every graph built over it. And the check that a tensor can
// travel: float32, bfloat16 or half, on the CPU, with at least `min_dims`
// dimensions.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "comm/communicator.h"

namespace cmpi::parallel {

inline void remember_tp_group(torch::autograd::AutogradContext* ctx, comm::Communicator& tp,
                              uint64_t buffer_key) {
  ctx->saved_data["tp"] = int64_t(reinterpret_cast<intptr_t>(&tp));
  ctx->saved_data["key"] = int64_t(buffer_key);
}

inline comm::Communicator& remembered_tp_group(torch::autograd::AutogradContext* ctx) {
  return *reinterpret_cast<comm::Communicator*>(intptr_t(ctx->saved_data["tp"].toInt()));
}

inline uint64_t remembered_buffer_key(torch::autograd::AutogradContext* ctx) {
  return uint64_t(ctx->saved_data["key"].toInt());
}

// Throws std::invalid_argument naming `op`.
inline void require_travelling_tensor(const torch::Tensor& x, const char* op, int64_t min_dims,
                                      const char* expected_shape) {
  if (!x.defined()) throw std::invalid_argument(std::string(op) + ": undefined tensor");
  const auto type = x.scalar_type();
  if (type != torch::kFloat && type != torch::kBFloat16 && type != torch::kHalf)
    throw std::invalid_argument(std::string(op) +
                                ": expects a float32, bfloat16 or half tensor, got " +
                                std::string(c10::toString(type)) + " on " + x.device().str());
  if (x.dim() < min_dims)
    throw std::invalid_argument(std::string(op) + ": expects " + expected_shape + ", got " +
                                c10::str(x.sizes()));
}

}  // namespace cmpi::parallel
