// Untied embeddings (model.tie_embeddings: false): the output head has its
// own table, so the token embedding's gradient holds only the rows of the
// step's tokens and is reduced over dp in buckets of its own (role
// embedding_gradient). Every layout must still reproduce the single-rank
// run's loss trajectory within a relative 1e-5 (only the order of float sums
// differs): dp with ZeRO 0-2, tp x dp and pp x dp (no tied copies to sum
// over pp). The embedding's buckets go through the block-sparse allreduce
// (exact) when a rule sends them there, and by default (sparse_embedding:
// auto) when the calibration finds it cheaper; both keep the trajectory.
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "comm/policy.h"
#include "tests/support/test_seed.h"
#include "tests/support/tiny_gpt_run.h"

namespace cmpi::trainer {
namespace {

using cmpi::testing::dims_of;
using cmpi::testing::expect_same_trajectory;
using cmpi::testing::train_in_groups_of;

constexpr double kTolerance = 1e-5;  // relative: only the order of float sums differs

// A vocabulary large against the 64 tokens a dp2 rank sees per step, so the
// embedding's gradient is sparse (rows of 32 floats, blocks of 8 rows).
config::Config untied_config(uint64_t seed) {
  config::Config c = cmpi::testing::tiny_gpt_config(seed);
  c.model.vocab_size = 1024;
  c.model.tie_embeddings = false;
  c.parallel.dp_bucket_bytes = 16 << 10;  // several buckets, the embedding's among them
  return c;
}

// The embedding's buckets always block-sparse (sparse_embedding off, so the
// rule below decides), every size.
comm::PolicyConfig block_sparse_embedding() {
  comm::PolicyConfig policy;
  policy.sparse_embedding = "off";
  comm::PolicyRule rule;
  rule.match.groups = {comm::GroupKind::kDp};
  rule.match.ops = {comm::Op::kAllreduce};
  rule.match.roles = {comm::Role::kEmbeddingGradient};
  rule.match.min_bytes = 0;
  rule.codec = compress::CodecSpec("block_sparse", {{"block", "256"}, {"select", "always"}});
  rule.origin = "test: embedding block-sparse";
  policy.rules.push_back(rule);
  return policy;
}

class UntiedEmbedding : public ::testing::Test {
 protected:
  void SetUp() override {
    int world = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    ASSERT_EQ(world % 4, 0) << "run this test on 4 ranks";
    config_ = untied_config(cmpi::testing::test_seed() % 100000);
    reference_ = cmpi::testing::single_rank_losses(config_);
    ASSERT_LT(reference_.back(), reference_.front()) << "the 1-rank run should learn";
  }
  config::Config config_;
  std::vector<double> reference_;
};

TEST_F(UntiedEmbedding, BlockSparseEmbeddingBucketsKeepTheTrajectory) {
  // The table (1024 x 32 floats) in buckets of its own, 16 KiB each.
  const uint64_t per_step = uint64_t(1024 * 32 * 4 / config_.parallel.dp_bucket_bytes);
  const uint64_t steps = uint64_t(config_.training.steps);
  for (int zero : {0, 1}) {
    const std::string what = "dp2 zero" + std::to_string(zero) + " block-sparse embedding";
    const auto run =
        train_in_groups_of(2, config_, dims_of(2, 1, 1, zero), block_sparse_embedding());
    expect_same_trajectory(reference_, run.losses, kTolerance, what);
    // Block-sparse calls: the embedding's buckets, nothing else.
    EXPECT_EQ(run.dp_allreduce.compressed_calls, per_step * steps) << what;
    EXPECT_LT(run.dp_allreduce.wire_bytes, run.dp_allreduce.raw_bytes) << what;
  }
  const auto dp4 = train_in_groups_of(4, config_, dims_of(4), block_sparse_embedding());
  expect_same_trajectory(reference_, dp4.losses, kTolerance, "dp4 block-sparse embedding");
  EXPECT_EQ(dp4.dp_allreduce.compressed_calls, per_step * steps);
}

TEST_F(UntiedEmbedding, DefaultPolicyKeepsTheTrajectoryOnEveryLayout) {
  comm::PolicyConfig automatic;  // sparse_embedding: auto, every size
  automatic.min_bytes = 0;
  expect_same_trajectory(reference_, train_in_groups_of(2, config_, dims_of(2), automatic).losses,
                         kTolerance, "dp2 sparse_embedding auto");
  expect_same_trajectory(reference_, train_in_groups_of(4, config_, dims_of(4, 1, 1, 2)).losses,
                         kTolerance, "dp4 zero2");
  expect_same_trajectory(reference_, train_in_groups_of(4, config_, dims_of(2, 2)).losses,
                         kTolerance, "tp2 x dp2");
  expect_same_trajectory(reference_,
                         train_in_groups_of(4, config_, dims_of(2, 1, 2), automatic).losses,
                         kTolerance, "pp2 x dp2 sparse_embedding auto");
}

}  // namespace
}  // namespace cmpi::trainer
