// parallel.tp_forward_sum: compute sums the forward tensor-parallel partial
// results in the compute dtype (Megatron-LM's bf16 allreduce) instead of in
// float32. First the layers on tp pairs of world ranks (every rank draws the
// same full tensors from the printed seed and works out the expected bits
// itself): a bf16 row-parallel layer rounds each rank's partial product to
// bf16, the pair sums the two as 16-bit words (widened, added, rounded once)
// and the bias is added once, after the sum, in float32 and rounded; its
// gradients are those of the float32-sum layer, bit for bit; the
// vocab-parallel embedding's rows summed in bf16 are the table's rows
// rounded; the forward traffic is 2 bytes a value, exactly half the float32
// sums'; all of it with and without sequence parallelism (reduce-scatters).
// Then training: the option changes nothing on one tp rank or under fp32,
// and the bf16 trajectories of tp2, tp2 with sequence parallelism, tp2 x pp2
// and dp2 x tp2 follow the single-rank bf16 run (run on 4 ranks).
#include <gtest/gtest.h>
#include <mpi.h>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "parallel/leaf_saving_linear.h"
#include "parallel/tensor/tensor_parallel_layers.h"
#include "tests/support/mpi_world.h"
#include "tests/support/test_seed.h"
#include "tests/support/tiny_gpt_run.h"

namespace cmpi::parallel {
namespace {

using testing::world_rank;
using testing::world_size;

uint64_t seed() {
  return cmpi::testing::test_seed() % 100000;
}

std::string at_seed() {
  return " (seed " + std::to_string(seed()) + ", rank " + std::to_string(world_rank()) + ")";
}

// Same values on every rank for the same `stream`.
torch::Tensor random_normal(std::vector<int64_t> shape, uint64_t stream) {
  auto generator = at::make_generator<at::CPUGeneratorImpl>(seed() * 7919 + stream);
  return torch::randn(shape, generator);
}

torch::Tensor random_ids(std::vector<int64_t> shape, int64_t vocab, uint64_t stream) {
  auto generator = at::make_generator<at::CPUGeneratorImpl>(seed() * 7919 + stream);
  return torch::randint(vocab, shape, generator, torch::kLong);
}

torch::Tensor slice_of(const torch::Tensor& full, int64_t dim, int rank, int parts) {
  return full.chunk(parts, dim)[size_t(rank)];
}

torch::Tensor widened(const torch::Tensor& x) {
  return x.to(torch::kFloat);
}

// World ranks 2k and 2k + 1 form a tp group.
struct PairTp : ::testing::Test {
  void SetUp() override {
    ASSERT_EQ(world_size() % 2, 0) << "run this test on an even number of ranks";
    MPI_Comm pair;
    MPI_Comm_split(MPI_COMM_WORLD, world_rank() / 2, world_rank(), &pair);
    tp = std::make_unique<comm::Communicator>(pair, comm::GroupKind::kTp);  // owns `pair`
    rank = tp->rank();
  }
  uint64_t raw_bytes(comm::Op op) const { return tp->stats().at(op).raw_bytes; }

  std::unique_ptr<comm::Communicator> tp;
  int rank = 0;
  static constexpr int kParts = 2;
};

struct RowRun {
  torch::Tensor y, dx, dw, db;
  uint64_t forward_bytes = 0;
};

TEST_F(PairTp, RowParallelLinearRoundsEachPartialSumsInBf16AndAddsTheBiasOnceAfter) {
  const int64_t in = 24, out = 10, batch = 2, time = 6;
  const auto weight = random_normal({out, in}, 1), bias = random_normal({out}, 2);
  const auto input = random_normal({batch, time, in}, 3).to(torch::kBFloat16);
  const auto grad_out = random_normal({batch, time, out}, 4).to(torch::kBFloat16);
  // A rank's float32 products of its bf16 input and the bf16-rounded weight
  // (parallel/leaf_saving_linear.h), as the layer computes them.
  const auto partial = [&](int r) {
    return linear_products(slice_of(input, 2, r, kParts).contiguous(),
                           slice_of(weight, 1, r, kParts).contiguous());
  };
  const auto pair_sum =
      (widened(partial(0).to(torch::kBFloat16)) + widened(partial(1).to(torch::kBFloat16)))
          .to(torch::kBFloat16);
  const auto expected_full = (widened(pair_sum) + bias).to(torch::kBFloat16);
  const auto float32_sums = (partial(0) + partial(1) + bias).to(torch::kBFloat16);

  for (bool sequence_parallel : {false, true}) {
    SCOPED_TRACE(sequence_parallel ? "sequence parallel" : "allreduce");
    const comm::Op op = sequence_parallel ? comm::Op::kReduceScatter : comm::Op::kAllreduce;
    const auto run = [&](bool in_bf16) {
      ParallelLinearOptions options;
      options.in_features = in;
      options.out_features = out;
      options.sequence_parallel = sequence_parallel;
      options.sum_in_input_dtype = in_bf16;
      RowParallelLinear layer(options, *tp);
      {
        torch::NoGradGuard no_grad;
        layer->weight.copy_(slice_of(weight, 1, rank, kParts));
        layer->bias.copy_(bias);
      }
      auto x = slice_of(input, 2, rank, kParts).clone().requires_grad_(true);
      RowRun result;
      const uint64_t before = raw_bytes(op);
      result.y = layer->forward(x);
      result.forward_bytes = raw_bytes(op) - before;
      result.y.backward(sequence_parallel ? slice_of(grad_out, 1, rank, kParts) : grad_out);
      result.dx = x.grad();
      result.dw = layer->weight.grad();
      result.db = layer->bias.grad();
      return result;
    };
    const RowRun bf16 = run(true), float32 = run(false);
    const auto mine = [&](const torch::Tensor& full) {
      return sequence_parallel ? slice_of(full, 1, rank, kParts) : full;
    };
    ASSERT_EQ(bf16.y.scalar_type(), torch::kBFloat16);
    EXPECT_TRUE(torch::equal(bf16.y, mine(expected_full))) << "bf16 sums" << at_seed();
    EXPECT_TRUE(torch::equal(float32.y, mine(float32_sums))) << "float32 sums" << at_seed();
    EXPECT_FALSE(torch::equal(bf16.y, float32.y))
        << "rounding each partial first changed no value" << at_seed();
    // Backward is the float32-sum layer's: the output gradient is bf16
    // either way, so it reaches the product unchanged.
    EXPECT_TRUE(torch::equal(bf16.dx, float32.dx)) << "input gradient" << at_seed();
    EXPECT_TRUE(torch::equal(bf16.dw, float32.dw)) << "weight gradient" << at_seed();
    EXPECT_TRUE(torch::equal(bf16.db, float32.db)) << "bias gradient" << at_seed();
    // Two ranks: an allreduce sends one buffer's worth of values, a
    // reduce-scatter half of one; 2 bytes a value against 4.
    const uint64_t values = uint64_t(batch * time * out) / (sequence_parallel ? 2 : 1);
    EXPECT_EQ(bf16.forward_bytes, values * 2) << at_seed();
    EXPECT_EQ(float32.forward_bytes, values * 4) << at_seed();
  }
}

TEST_F(PairTp, EmbeddingRowsSummedInBf16AreTheTablesRowsRounded) {
  const int64_t vocab = 16, hidden = 8, batch = 2, time = 6;
  const auto table = random_normal({vocab, hidden}, 10);
  const auto ids = random_ids({batch, time}, vocab, 11);
  const auto grad_out = random_normal({batch, time, hidden}, 12);
  for (bool sequence_parallel : {false, true}) {
    SCOPED_TRACE(sequence_parallel ? "sequence parallel" : "allreduce");
    const comm::Op op = sequence_parallel ? comm::Op::kReduceScatter : comm::Op::kAllreduce;
    const auto mine = [&](const torch::Tensor& full) {
      return sequence_parallel ? slice_of(full, 1, rank, kParts) : full;
    };
    VocabParallelEmbedding embedding(vocab, hidden, *tp, 0, true, sequence_parallel,
                                     torch::kBFloat16);
    {
      torch::NoGradGuard no_grad;
      embedding->weight.copy_(slice_of(table, 0, rank, kParts));
    }
    const uint64_t before = raw_bytes(op);
    const auto rows = embedding->forward(ids);
    const uint64_t forward_bytes = raw_bytes(op) - before;
    ASSERT_EQ(rows.scalar_type(), torch::kFloat);
    EXPECT_TRUE(
        torch::equal(rows, mine(widened(torch::embedding(table, ids).to(torch::kBFloat16)))))
        << at_seed();
    const uint64_t values = uint64_t(batch * time * hidden) / (sequence_parallel ? 2 : 1);
    EXPECT_EQ(forward_bytes, values * 2) << at_seed();
    // The output's gradient crosses the sum as bf16 (under sequence
    // parallelism it travels so): this rank's rows get it rounded.
    rows.backward(mine(grad_out));
    auto reference = table.clone().requires_grad_(true);
    torch::embedding(reference, ids).backward(widened(grad_out.to(torch::kBFloat16)));
    EXPECT_TRUE(torch::allclose(embedding->weight.grad(),
                                slice_of(reference.grad(), 0, rank, kParts), 1e-6, 1e-6))
        << at_seed();
  }
}

// ---------------------------------------------------------------- training

// Rounding each rank's partial product to bf16 before the sum adds an error
// of a bf16 half-ulp (2^-9) per value, as the input gradients' 16-bit tp sums
// already do: mixed_precision_mpi_test's tolerance for layouts with tp.
constexpr double kBf16TensorParallelTolerance = 2e-3;

config::Config with_forward_sum(config::Config c, const std::string& sum) {
  c.parallel.tp_forward_sum = sum;
  return c;
}

TEST(TpForwardSumTraining, OneTpRankAndFloat32ComputeAreUnchanged) {
  using cmpi::testing::dims_of;
  auto c = cmpi::testing::tiny_neox_config(seed());
  c.training.steps = 4;
  const auto fp32_tp2 = [&](const std::string& sum) {
    return cmpi::testing::train_in_groups_of(2, with_forward_sum(c, sum), dims_of(1, 2)).losses;
  };
  EXPECT_EQ(fp32_tp2("compute"), fp32_tp2("float32")) << "fp32 tp2" << at_seed();
  c.training.precision = config::Precision::kBf16;
  EXPECT_EQ(cmpi::testing::single_rank_losses(with_forward_sum(c, "compute")),
            cmpi::testing::single_rank_losses(c))
      << "bf16 on one rank" << at_seed();
}

TEST(TpForwardSumTraining, Bf16LayoutsFollowTheSingleRankRun) {
  using cmpi::testing::dims_of;
  using cmpi::testing::with_zero;
  ASSERT_EQ(world_size() % 4, 0) << "run this test on 4 ranks";
  auto c = cmpi::testing::tiny_neox_config(seed());
  c.training.precision = config::Precision::kBf16;
  const auto reference = cmpi::testing::single_rank_losses(c);
  ASSERT_LT(reference.back(), reference.front()) << "the 1-rank run should learn" << at_seed();
  const auto sums = with_forward_sum(c, "compute");
  auto sequence_parallel = sums;
  sequence_parallel.parallel.sequence_parallel = true;
  const auto tp2 = cmpi::testing::train_in_groups_of(2, sums, dims_of(1, 2)).losses;
  const auto tp2_float32 = cmpi::testing::train_in_groups_of(2, c, dims_of(1, 2)).losses;
  EXPECT_NE(tp2, tp2_float32) << "bf16 forward sums computed exactly as float32 ones" << at_seed();
  const auto expect = [&](const std::vector<double>& losses, const std::string& what) {
    cmpi::testing::expect_same_trajectory(reference, losses, kBf16TensorParallelTolerance,
                                          what + at_seed());
    double largest = 0;
    for (size_t i = 0; i < losses.size() && i < reference.size(); ++i)
      largest = std::max(largest, std::abs(losses[i] - reference[i]) / std::abs(reference[i]));
    if (world_rank() == 0)
      std::printf("bf16 %s: largest relative loss difference from 1 rank %.2e%s\n", what.c_str(),
                  largest, at_seed().c_str());
  };
  expect(tp2, "tp2, bf16 sums");
  expect(tp2_float32, "tp2, float32 sums (for comparison)");
  expect(cmpi::testing::train_in_groups_of(2, sequence_parallel, dims_of(1, 2)).losses,
         "tp2 SP, bf16 sums");
  expect(cmpi::testing::train_in_groups_of(4, sums, dims_of(1, 2, 2)).losses,
         "tp2 x pp2, bf16 sums");
  expect(cmpi::testing::train_in_groups_of(4, with_zero(sequence_parallel, 1), dims_of(2, 2, 1, 1))
             .losses,
         "dp2 x tp2 SP zero1, bf16 sums");
}

}  // namespace
}  // namespace cmpi::parallel
