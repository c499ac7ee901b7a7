// Data parallelism must not change what is learned: with the global batch
// split across 2 or 4 DP ranks (and fewer micro-batches per rank), the loss
// trajectory over 10 steps matches the single-rank run on the same global
// batch within a relative 1e-5 (only the order of float sums differs).
#include <gtest/gtest.h>
#include <mpi.h>

#include <vector>

#include "tests/support/test_seed.h"
#include "tests/support/tiny_gpt_run.h"

namespace cmpi::trainer {
namespace {

using cmpi::testing::expect_same_trajectory;
using cmpi::testing::train_in_groups_of;

constexpr double kTolerance = 1e-5;  // relative: only the order of float sums differs

config::Config small_config(uint64_t seed) {
  config::Config c = cmpi::testing::tiny_gpt_config(seed);
  c.parallel.dp_bucket_bytes = 16 << 10;  // several buckets
  return c;
}

parallel::ParallelDims dp_dims(int dp) {
  parallel::ParallelDims dims;
  dims.dp = dp;
  return dims;
}

TEST(DataParallel, MatchesSingleRankLossTrajectory) {
  int world = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  ASSERT_EQ(world % 4, 0) << "run this test on 4 ranks";
  const config::Config config = small_config(cmpi::testing::test_seed() % 100000);

  const std::vector<double> reference = cmpi::testing::single_rank_losses(config);
  EXPECT_LT(reference.back(), reference.front()) << "the 1-rank run should learn";

  expect_same_trajectory(reference, train_in_groups_of(2, config, dp_dims(2)).losses, kTolerance,
                         "dp2");
  expect_same_trajectory(reference, train_in_groups_of(4, config, dp_dims(4)).losses, kTolerance,
                         "dp4");
}

}  // namespace
}  // namespace cmpi::trainer
