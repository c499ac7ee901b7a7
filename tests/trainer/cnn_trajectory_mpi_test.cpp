// The ResNet trainer under MPI (4 ranks): the single-rank run learns the
// synthetic images (loss falls, accuracy on training and held-out images
// rises above chance), and data parallelism (dp2, also with ZeRO 1), pipeline
// parallelism (pp2 with gpipe and 1f1b, balanced and uneven stages, pp4) and
// dp2 x pp2, and the bi-directional pipeline (pp2, pp4, dp2 x pp2) reproduce
// its loss and accuracy trajectory. Every layout uses the same micro-batch
// size, so BatchNorm sees the same micro-batches. Only the order of float sums differs (the
// gradient reduction over dp; the global gradient norm summed per stage over pp, which moves the
// clipping factor by an ulp): a relative 1e-5 per step (measured ~1e-7). The accuracy may differ by
// at most one image per step (a near tie between two logits can fall either way).
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "parallel/mesh/process_groups.h"
#include "tests/support/test_seed.h"
#include "tests/support/tiny_gpt_run.h"
#include "trainer/trainer.h"

namespace cmpi::trainer {
namespace {

constexpr double kTolerance = 1e-5;  // relative, per step

parallel::ParallelDims dims_of(int dp, int pp, int zero_stage = 0) {
  parallel::ParallelDims d;
  d.dp = dp;
  d.pp = pp;
  d.zero_stage = zero_stage;
  return d;
}

TrainResult train_on(MPI_Comm comm, const config::Config& config,
                     const parallel::ParallelDims& dims) {
  parallel::ProcessGroups groups(comm, dims, config.compression);
  TrainerOptions options;
  options.print_every = 0;
  Trainer trainer(config, groups, options);
  return trainer.run();
}

// Groups of `size` consecutive world ranks each train; every rank returns
// its group's result.
TrainResult train_in_groups_of(int size, const config::Config& config,
                               const parallel::ParallelDims& dims) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm group;
  MPI_Comm_split(MPI_COMM_WORLD, rank / size, rank, &group);
  TrainResult result = train_on(group, config, dims);
  MPI_Comm_free(&group);
  return result;
}

// World rank 0 trains alone; every rank gets its losses and accuracies.
TrainResult single_rank(const config::Config& config) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  TrainResult result;
  if (rank == 0) result = train_on(MPI_COMM_SELF, config, parallel::ParallelDims{});
  const auto steps = size_t(config.training.steps);
  result.losses.resize(steps);
  result.accuracies.resize(steps);
  MPI_Bcast(result.losses.data(), int(steps), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Bcast(result.accuracies.data(), int(steps), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return result;
}

void expect_same_run(const TrainResult& reference, const TrainResult& run, const std::string& what,
                     double tolerance = kTolerance) {
  cmpi::testing::expect_same_trajectory(reference.losses, run.losses, tolerance, what);
  double worst = 0;
  for (size_t i = 0; i < run.losses.size() && i < reference.losses.size(); ++i)
    worst = std::max(worst, std::abs(run.losses[i] - reference.losses[i]) / reference.losses[i]);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) std::printf("%s: largest relative loss difference %.3g\n", what.c_str(), worst);
  ASSERT_EQ(reference.accuracies.size(), run.accuracies.size()) << what;
  for (size_t i = 0; i < run.accuracies.size(); ++i)
    EXPECT_NEAR(run.accuracies[i], reference.accuracies[i], 1.0 / 16 + 1e-9)
        << what << " step " << i + 1 << " (seed " << cmpi::testing::test_seed() << ")";
}

class CnnTrajectory : public ::testing::Test {
 protected:
  void SetUp() override {
    int world = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    ASSERT_EQ(world, 4) << "run this test on 4 ranks";
    seed_ = cmpi::testing::test_seed() % 100000;
    config_ = cmpi::testing::tiny_resnet_config(seed_);
  }
  uint64_t seed_ = 0;
  config::Config config_;
};

TEST_F(CnnTrajectory, SingleRankLearnsTheSyntheticImages) {
  config::Config config = config_;
  config.model.width = 8;
  config.training.steps = 40;
  config.training.global_batch = 32;
  config.training.micro_batch = 8;
  config.training.warmup_steps = 3;
  config.eval.every = 40;
  config.eval.batches = 4;
  const TrainResult r = single_rank(config);
  double first = 0, last = 0, last_accuracy = 0;
  for (int i = 0; i < 5; ++i) {
    first += r.losses[size_t(i)] / 5;
    last += r.losses[r.losses.size() - 1 - size_t(i)] / 5;
    last_accuracy += r.accuracies[r.accuracies.size() - 1 - size_t(i)] / 5;
  }
  EXPECT_LT(last, 0.7 * first) << "seed " << seed_;
  EXPECT_GT(last_accuracy, 0.5) << "chance is 0.25; seed " << seed_;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    ASSERT_EQ(r.val_accuracies.size(), 1u);
    EXPECT_GT(r.val_accuracies[0].second, 0.5) << "held-out images; seed " << seed_;
  }
}

TEST_F(CnnTrajectory, DataParallelMatchesSingleRank) {
  const TrainResult reference = single_rank(config_);
  expect_same_run(reference, train_in_groups_of(2, config_, dims_of(2, 1)), "dp2");
  expect_same_run(reference, train_in_groups_of(2, config_, dims_of(2, 1, 1)), "dp2 zero1");
  expect_same_run(reference, train_in_groups_of(4, config_, dims_of(4, 1)), "dp4");
}

TEST_F(CnnTrajectory, PipelineMatchesSingleRank) {
  const TrainResult reference = single_rank(config_);
  config::Config gpipe = config_;
  gpipe.parallel.schedule = config::PipelineSchedule::kGpipe;
  expect_same_run(reference, train_in_groups_of(2, gpipe, dims_of(1, 2)), "pp2 gpipe");
  config::Config uneven = config_;
  uneven.parallel.schedule = config::PipelineSchedule::kOneFOneB;
  uneven.parallel.stage_layers = {1, 4};
  expect_same_run(reference, train_in_groups_of(2, uneven, dims_of(1, 2)), "pp2 1f1b [1, 4]");
  config::Config four = config_;
  four.parallel.stage_layers = {2, 1, 1, 1};
  expect_same_run(reference, train_on(MPI_COMM_WORLD, four, dims_of(1, 4)), "pp4 [2, 1, 1, 1]");
}

TEST_F(CnnTrajectory, DataAndPipelineMatchSingleRank) {
  const TrainResult reference = single_rank(config_);
  expect_same_run(reference, train_on(MPI_COMM_WORLD, config_, dims_of(2, 2, 1)),
                  "dp2 x pp2 zero1 1f1b");
}

// GEMS-MASTER: two replicas in opposite directions over the same pp ranks,
// half of the micro-batches each, gradients summed between the copies of
// each stage: the single-rank trajectory again.
TEST_F(CnnTrajectory, BidirectionalPipelineMatchesSingleRank) {
  const TrainResult reference = single_rank(config_);
  config::Config two = config_;
  two.parallel.bidirectional = true;
  two.parallel.schedule = config::PipelineSchedule::kGpipe;
  expect_same_run(reference, train_in_groups_of(2, two, dims_of(1, 2)), "bidirectional pp2 gpipe");
  config::Config four = config_;
  four.parallel.bidirectional = true;
  four.parallel.stage_layers = {2, 1, 1, 1};
  expect_same_run(reference, train_on(MPI_COMM_WORLD, four, dims_of(1, 4)),
                  "bidirectional pp4 [2, 1, 1, 1] 1f1b");
  config::Config dp = config_;
  dp.parallel.bidirectional = true;
  expect_same_run(reference, train_on(MPI_COMM_WORLD, dp, dims_of(2, 2, 1)),
                  "bidirectional dp2 x pp2 zero1");
}

}  // namespace
}  // namespace cmpi::trainer
