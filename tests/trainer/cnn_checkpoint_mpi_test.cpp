// ResNet checkpoints through the one training loop (4 ranks). Each case
// trains layout A for 6 steps, saving at step 3, with a validation pass at
// the end (which reads the BatchNorm running statistics), then resumes A's
// step-3 checkpoint under layout B and trains steps 4..6:
//   - same layout (dp2 x pp2, ZeRO 1): the losses, accuracies and the final
//     validation loss equal A's bit for bit (weights, AdamW moments, step
//     count and the running statistics all came back);
//   - another layout: dp2 x pp2 -> sp2 x dp2 and sp2 x pp2 -> dp4 change dp,
//     pp and sp at once; the run continues within the spatial tests'
//     tolerance of A's (only the order of float sums differs), so does the
//     validation loss where dp stays (the running statistics are averaged
//     over dp, so another dp averages them otherwise), and the resumed run's
//     first save holds A's step-3 tensors, running statistics included, bit
//     for bit (the load re-cut them for B, the save cut them back).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_store.h"
#include "checkpoint/loaded_checkpoint.h"
#include "parallel/mesh/process_groups.h"
#include "tests/support/checkpoint_state.h"
#include "tests/support/test_seed.h"
#include "tests/support/tiny_gpt_run.h"
#include "trainer/trainer.h"

namespace cmpi::trainer {
namespace {

constexpr double kTolerance = 1e-4;  // relative, per step (as cnn_spatial_mpi_test)
constexpr int64_t kSteps = 6, kSaveAt = 3;

struct Layout {
  int dp = 1, pp = 1, sp = 1, zero = 0;
  int ranks() const { return dp * pp * sp; }
  std::string name() const {
    return "dp" + std::to_string(dp) + "pp" + std::to_string(pp) + "sp" + std::to_string(sp) + "z" +
           std::to_string(zero);
  }
  parallel::ParallelDims dims() const {
    parallel::ParallelDims d;
    d.dp = dp;
    d.pp = pp;
    d.sp = sp;
    d.zero_stage = zero;
    return d;
  }
};

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

// 18x18 images (uneven tiles), a global batch of 8 in micro-batches of 2,
// checkpoints under `dir`, one evaluation after the last step.
config::Config test_config(uint64_t seed, const std::string& dir) {
  config::Config c = cmpi::testing::tiny_resnet_config(seed);
  c.model.image_size = 18;
  c.training.steps = kSteps;
  c.training.global_batch = 8;
  c.training.micro_batch = 2;
  c.checkpoint.dir = dir;
  c.checkpoint.every = kSaveAt;
  c.checkpoint.keep_last = 0;
  c.eval.every = kSteps;
  c.eval.batches = 2;
  return c;
}

// Trains on the first layout.ranks() world ranks; every world rank gets
// world rank 0's result (losses, accuracies, validation loss).
TrainResult run_on(const Layout& layout, const config::Config& config,
                   const std::string& resume_path, bool save_first) {
  const bool member = world_rank() < layout.ranks();
  MPI_Comm comm;
  MPI_Comm_split(MPI_COMM_WORLD, member ? 0 : 1, world_rank(), &comm);
  TrainResult result;
  if (member) {
    parallel::ProcessGroups groups(comm, layout.dims(), config.compression);
    TrainerOptions options;
    options.print_every = 0;
    options.resume_path = resume_path;
    Trainer trainer(config, groups, options);
    if (save_first) trainer.save_checkpoint();
    result = trainer.run();
  }
  MPI_Comm_free(&comm);
  // Share rank 0's figures with every rank (the assertions run everywhere).
  int64_t sizes[2] = {int64_t(result.losses.size()), int64_t(result.accuracies.size())};
  MPI_Bcast(sizes, 2, MPI_INT64_T, 0, MPI_COMM_WORLD);
  result.losses.resize(size_t(sizes[0]));
  result.accuracies.resize(size_t(sizes[1]));
  MPI_Bcast(result.losses.data(), int(sizes[0]), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Bcast(result.accuracies.data(), int(sizes[1]), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  double val = result.val_losses.empty() ? -1 : result.val_losses.back().second;
  MPI_Bcast(&val, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  result.val_losses = {{kSteps, val}};
  return result;
}

// Every tensor of two checkpoints bit for bit; the running statistics among them.
void expect_same_state(const std::string& a_dir, const std::string& b_dir,
                       const std::string& what) {
  if (world_rank() != 0) return;
  cmpi::testing::expect_same_checkpoint_state(a_dir, b_dir, what);
  bool has_statistics = false;
  for (const auto& name : checkpoint::LoadedCheckpoint::read(a_dir, nullptr).names())
    has_statistics = has_statistics || name.find("running_mean") != std::string::npos;
  EXPECT_TRUE(has_statistics) << what << ": no BatchNorm running statistics in the checkpoint";
}

class CnnCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    int world = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    ASSERT_EQ(world, 4) << "run this test on 4 ranks";
    seed_ = cmpi::testing::test_seed() % 100000;
    root_ = std::filesystem::temp_directory_path().string() + "/cmpi_cnn_checkpoint_" +
            std::to_string(seed_);
    if (world_rank() == 0) std::filesystem::remove_all(root_);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  void TearDown() override {
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank() == 0) std::filesystem::remove_all(root_);
  }

  // A trains and saves; B resumes A's step-3 checkpoint (saving it again at
  // once) and trains on. Returns {A, B}.
  std::pair<TrainResult, TrainResult> resume_case(const Layout& a, const Layout& b) {
    const std::string what = a.name() + " -> " + b.name();
    if (world_rank() == 0)
      std::printf("case: %s (seed %llu)\n", what.c_str(), (unsigned long long)seed_);
    const std::string dir_a = root_ + "/" + what + "/a", dir_b = root_ + "/" + what + "/b";
    const auto config_a = test_config(seed_, dir_a);
    const TrainResult original = run_on(a, config_a, "", false);
    const std::string saved = dir_a + "/" + checkpoint::checkpoint_name(kSaveAt);
    const auto config_b = test_config(seed_, dir_b);
    const TrainResult resumed = run_on(b, config_b, saved, true);
    MPI_Barrier(MPI_COMM_WORLD);
    expect_same_state(saved, dir_b + "/" + checkpoint::checkpoint_name(kSaveAt), what);
    return {original, resumed};
  }

  uint64_t seed_ = 0;
  std::string root_;
};

TEST_F(CnnCheckpoint, SameLayoutResumesBitExact) {
  const Layout layout{2, 2, 1, 1};
  const auto [original, resumed] = resume_case(layout, layout);
  ASSERT_EQ(original.losses.size(), size_t(kSteps));
  ASSERT_EQ(resumed.losses.size(), size_t(kSteps - kSaveAt));
  const std::vector<double> after(original.losses.begin() + kSaveAt, original.losses.end());
  EXPECT_EQ(resumed.losses, after) << "same layout: resuming must be bit-exact; seed " << seed_;
  const std::vector<double> accuracies(original.accuracies.begin() + kSaveAt,
                                       original.accuracies.end());
  EXPECT_EQ(resumed.accuracies, accuracies) << "seed " << seed_;
  // Evaluation normalises with the running statistics: equal only if they
  // were restored too.
  EXPECT_EQ(resumed.val_losses.back().second, original.val_losses.back().second)
      << "seed " << seed_;
}

TEST_F(CnnCheckpoint, ReshardChangesDataPipelineAndSpatial) {
  for (const auto& [a, b] : {std::pair<Layout, Layout>{{2, 2, 1, 1}, {2, 1, 2, 0}},
                             std::pair<Layout, Layout>{{1, 2, 2, 0}, {4, 1, 1, 1}}}) {
    const auto [original, resumed] = resume_case(a, b);
    const std::vector<double> after(original.losses.begin() + kSaveAt, original.losses.end());
    cmpi::testing::expect_same_trajectory(after, resumed.losses, kTolerance,
                                          a.name() + " -> " + b.name());
    // The running statistics are averaged over dp after every step, so after
    // the resume they follow dp's averaging: equal validation losses only
    // where dp stays the same (docs/cnn.md).
    if (a.dp == b.dp)
      EXPECT_NEAR(resumed.val_losses.back().second, original.val_losses.back().second,
                  kTolerance * std::abs(original.val_losses.back().second))
          << a.name() << " -> " << b.name() << "; seed " << seed_;
  }
}

}  // namespace
}  // namespace cmpi::trainer
