// The GPT-NeoX architecture (rotary positions on 25 % of each head's
// dimensions, parallel residual, untied head, tanh GeLU, small_init /
// wang_init) under every layout: dp2, tp2, pp2, dp2 x tp2 and per-layer
// ZeRO-3 (sharded initialisation through fill_initial_values) reproduce the
// single-rank run's loss trajectory, as the GPT-2 style model does in
// data_parallel_mpi_test, tensor_parallel_mpi_test and zero3_layer_mpi_test.
// Only the order of float sums differs: a relative 1e-5, and 1e-4 under
// ZeRO-3 (zero3_layer_mpi_test says why). Whether the single-rank model is
// GPT-NeoX at all is the independent reference's question
// (tests/models/reference_forward_test.sh).
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "tests/support/mpi_world.h"
#include "tests/support/test_seed.h"
#include "tests/support/tiny_gpt_run.h"

namespace cmpi::trainer {
namespace {

using cmpi::testing::dims_of;
using cmpi::testing::expect_same_trajectory;
using cmpi::testing::train_in_groups_of;
using cmpi::testing::with_zero;

constexpr double kTolerance = 1e-5;       // relative: only the order of float sums differs
constexpr double kZero3Tolerance = 1e-4;  // as zero3_layer_mpi_test

TEST(NeoxArchitecture, EveryLayoutMatchesTheSingleRankRun) {
  ASSERT_EQ(cmpi::testing::world_size() % 4, 0) << "run this test on 4 ranks";
  const uint64_t seed = cmpi::testing::test_seed() % 100000;
  const config::Config config = cmpi::testing::tiny_neox_config(seed);
  const std::vector<double> reference = cmpi::testing::single_rank_losses(config);
  ASSERT_LT(reference.back(), reference.front())
      << "the 1-rank run should learn (seed " << seed << ")";
  const auto expect = [&](int group, const config::Config& c, const parallel::ParallelDims& dims,
                          double tolerance, const std::string& what) {
    expect_same_trajectory(reference, train_in_groups_of(group, c, dims).losses, tolerance,
                           what + " (seed " + std::to_string(seed) + ")");
  };
  expect(2, config, dims_of(2), kTolerance, "dp2");
  expect(2, config, dims_of(1, 2), kTolerance, "tp2");
  expect(2, config, dims_of(1, 1, 2), kTolerance, "pp2");
  expect(4, with_zero(config, 1), dims_of(2, 2, 1, 1), kTolerance, "dp2 x tp2 zero1");
  expect(2, with_zero(config, 3), dims_of(2, 1, 1, 3), kZero3Tolerance, "dp2 zero3 per layer");
  expect(4, with_zero(config, 3), dims_of(2, 1, 2, 3), kZero3Tolerance,
         "dp2 x pp2 zero3 per layer");
}

}  // namespace
}  // namespace cmpi::trainer
