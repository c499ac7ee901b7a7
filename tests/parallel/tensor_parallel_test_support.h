// Shared pieces of the tensor- and sequence-parallel MPI tests
// (tensor_parallel_mpi_test.cpp, sequence_parallel_mpi_test.cpp), where the
// whole MPI world is the tp group: tensors every rank draws alike from the
// printed seed, a rank's slice of a full tensor, the comparison of a sharded
// result with the unsharded reference (naming shapes, rank and seed), the
// fixture holding the world's tp Communicator, the tiny GPT both compare
// with its single-rank self, and the checks of a sharded model against it
// (loss, each gradient's shard) and of what every tp rank must agree on.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "models/gpt.h"
#include "parallel/mesh/parallel_dims.h"
#include "parallel/param_info.h"
#include "tests/support/mpi_world.h"
#include "tests/support/test_seed.h"

namespace cmpi::parallel::tp_testing {

constexpr double kTolerance = 1e-5;

// The seed of the tensors and models drawn here (printed on failure).
inline uint64_t seed() {
  return cmpi::testing::test_seed() % 100000;
}

// Same values on every rank for the same `stream`.
inline torch::Tensor random_normal(std::vector<int64_t> shape, uint64_t stream) {
  auto generator = at::make_generator<at::CPUGeneratorImpl>(seed() * 7919 + stream);
  return torch::randn(shape, generator);
}

inline torch::Tensor random_ids(std::vector<int64_t> shape, int64_t vocab, uint64_t stream) {
  auto generator = at::make_generator<at::CPUGeneratorImpl>(seed() * 7919 + stream);
  return torch::randint(vocab, shape, generator, torch::kLong);
}

// Rank `rank`'s part of `full` cut into `parts` along `dim`.
inline torch::Tensor slice_of(const torch::Tensor& full, int64_t dim, int rank, int parts) {
  return full.chunk(parts, dim)[size_t(rank)];
}

// The largest elementwise |a - b|; infinite when the shapes differ.
inline double max_difference(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.sizes() != b.sizes()) return INFINITY;
  return (a - b).abs().max().item<double>();
}

// |a - b| <= kTolerance * max(1, max|b|), elementwise maximum.
#define EXPECT_TENSOR_NEAR(a, b, what)                                                            \
  do {                                                                                            \
    const auto actual_ = (a).detach(), expected_ = (b).detach();                                  \
    const double scale_ = std::max(1.0, expected_.abs().max().item<double>());                    \
    EXPECT_LE(::cmpi::parallel::tp_testing::max_difference(actual_, expected_),                   \
              ::cmpi::parallel::tp_testing::kTolerance* scale_)                                   \
        << (what) << ": shapes " << actual_.sizes() << " vs " << expected_.sizes() << " on rank " \
        << ::cmpi::testing::world_rank() << " (seed " << ::cmpi::parallel::tp_testing::seed()     \
        << ")";                                                                                   \
  } while (0)

// The whole world as the tp group.
struct WorldTp : ::testing::Test {
  comm::Communicator tp{MPI_COMM_WORLD, comm::GroupKind::kTp};
  int rank = tp.rank();
  int parts = tp.size();
};

// A GPT-2 style model small enough to compare with its single-rank self.
inline models::GptOptions tiny_gpt_options(int64_t layers = 2) {
  models::GptOptions o;
  o.vocab_size = 64;
  o.seq_len = 16;
  o.layers = layers;
  o.hidden = 32;
  o.heads = 4;
  o.seed = seed();
  return o;
}

// tiny_gpt_options with GPT-NeoX's switches: rotary positions, the parallel
// residual, an untied head, the tanh GeLU, NeoX's initialisation.
inline models::GptOptions tiny_neox_options(int64_t layers = 2) {
  auto o = tiny_gpt_options(layers);
  o.position = models::PositionEncoding::kRotary;
  o.parallel_residual = true;
  o.tie_embeddings = false;
  o.activation = models::MlpActivation::kGeluTanh;
  o.init = models::InitScheme::kNeox;
  return o;
}

inline ParallelDims tp_dims(int tp) {
  ParallelDims dims;
  dims.tp = tp;
  return dims;
}

inline std::map<std::string, torch::Tensor> by_name(const std::vector<ParamInfo>& infos) {
  std::map<std::string, torch::Tensor> out;
  for (const auto& info : infos) out[info.name] = info.tensor;
  return out;
}

// The tp-sharded `model`'s loss equals the single-rank model's, and after
// backward every parameter's gradient is its tp shard of the single-rank
// model's (`single_params`, by name, after the single-rank backward).
inline void expect_shards_match_single_rank(
    models::Gpt& model, const torch::Tensor& tokens, const torch::Tensor& targets,
    const torch::Tensor& single_loss, const std::map<std::string, torch::Tensor>& single_params,
    int rank, int parts) {
  auto loss = model->loss(tokens, targets);
  EXPECT_NEAR(loss.item<double>(), single_loss.item<double>(),
              kTolerance * std::abs(single_loss.item<double>()));
  loss.backward();
  for (const auto& layout : model->layouts()) {
    const auto& full_grad = single_params.at(layout.name).grad();
    EXPECT_TENSOR_NEAR(
        layout.tensor.grad(),
        layout.split_dim >= 0 ? slice_of(full_grad, layout.split_dim, rank, parts) : full_grad,
        layout.name + " gradient");
  }
}

// The loss and, per parameter not split over tp, the sum of |gradient|
// (after backward): what every tp rank must hold alike.
inline std::vector<float> loss_and_replicated_gradient_sums(const torch::Tensor& loss,
                                                            const std::vector<ParamInfo>& infos) {
  std::vector<float> out = {loss.item<float>()};
  for (const auto& info : infos)
    if (!info.tensor_parallel) out.push_back(info.tensor.grad().abs().sum().item<float>());
  return out;
}

// Every rank's values (loss_and_replicated_gradient_sums) equal rank 0's.
inline void expect_same_on_every_rank(const std::vector<float>& mine) {
  const int ranks = cmpi::testing::world_size();
  std::vector<float> all(mine.size() * size_t(ranks));
  MPI_Allgather(mine.data(), int(mine.size()), MPI_FLOAT, all.data(), int(mine.size()), MPI_FLOAT,
                MPI_COMM_WORLD);
  for (int r = 1; r < ranks; ++r)
    for (size_t i = 0; i < mine.size(); ++i)
      EXPECT_EQ(all[size_t(r) * mine.size() + i], all[i])
          << (i == 0 ? "loss" : "replicated gradient #" + std::to_string(i)) << " on rank " << r
          << " (seed " << seed() << ")";
}

}  // namespace cmpi::parallel::tp_testing
