// Seeded float tensors for tests that compare layouts: the same seed gives the
// same values on every rank.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace cmpi::testing {

// N(0, 1) floats of `shape` from LibTorch's CPU generator seeded with `seed`.
inline torch::Tensor seeded_normal(const std::vector<int64_t>& shape, uint64_t seed) {
  auto generator = at::make_generator<at::CPUGeneratorImpl>(seed);
  return torch::randn(shape, generator, torch::kFloat);
}

}  // namespace cmpi::testing
