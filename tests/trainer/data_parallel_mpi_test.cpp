// Data parallelism must not change what is learned: with the global batch
// split across 2 or 4 DP ranks (and fewer micro-batches per rank), the loss
// trajectory over 10 steps matches the single-rank run on the same global
// batch within a relative 1e-5 (only the order of float sums differs).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>

#include "parallel/process_groups.h"
#include "tests/support/test_seed.h"
#include "trainer/trainer.h"

namespace cmpi::trainer {
namespace {

Config small_config(uint64_t seed) {
  Config c;
  c.run.seed = seed;
  c.model.vocab_size = 64;
  c.model.seq_len = 16;
  c.model.layers = 2;
  c.model.hidden = 32;
  c.model.heads = 4;
  c.training.steps = 10;
  c.training.global_batch = 8;
  c.training.micro_batch = 2;
  c.training.lr = 3e-3;
  c.training.min_lr = 3e-4;
  c.training.warmup_steps = 2;
  c.data.seed = seed + 1;
  c.data.branching = 3;
  c.parallel.dp_bucket_bytes = 16 << 10;  // several buckets
  return c;
}

// Trains on `comm` (every rank of it calls this) with dp = its size.
std::vector<double> train_on(MPI_Comm comm, const Config& config) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  parallel::ParallelDims dims;
  dims.dp = size;
  parallel::ProcessGroups groups(comm, dims);
  TrainerOptions options;
  options.print_every = 0;
  Trainer trainer(config, groups, options);
  return trainer.run().losses;
}

void expect_same_trajectory(const std::vector<double>& reference, const std::vector<double>& losses,
                            const std::string& what) {
  ASSERT_EQ(reference.size(), losses.size()) << what;
  for (size_t i = 0; i < reference.size(); ++i)
    EXPECT_LE(std::abs(losses[i] - reference[i]) / std::abs(reference[i]), 1e-5)
        << what << " step " << i + 1 << ": " << losses[i] << " vs 1-rank " << reference[i];
}

TEST(DataParallel, MatchesSingleRankLossTrajectory) {
  int world = 0, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  ASSERT_EQ(world % 4, 0) << "run this test on 4 ranks";
  const Config config = small_config(cmpi::testing::test_seed() % 100000);

  std::vector<double> reference(config.training.steps);
  if (rank == 0) reference = train_on(MPI_COMM_SELF, config);
  MPI_Bcast(reference.data(), int(reference.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  EXPECT_LT(reference.back(), reference.front()) << "the 1-rank run should learn";

  MPI_Comm pair;
  MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &pair);
  expect_same_trajectory(reference, train_on(pair, config), "dp2");
  MPI_Comm_free(&pair);

  MPI_Comm quad;
  MPI_Comm_split(MPI_COMM_WORLD, rank / 4, rank, &quad);
  expect_same_trajectory(reference, train_on(quad, config), "dp4");
  MPI_Comm_free(&quad);
}

}  // namespace
}  // namespace cmpi::trainer
