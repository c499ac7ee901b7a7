// Checkpoints saved under one layout and loaded under another (and under the
// same one). For each case, on the first ranks of an 8-rank world:
//   1. layout A trains 6 steps, saving at steps 3 and 6 (the "continued under
//      the original layout" trajectory);
//   2. layout B resumes A's step-3 checkpoint and saves it again at once: every
//      parameter's consolidated weights and AdamW moments must equal A's bit
//      for bit (the load re-cut them for B, the save cut them back);
//   3. B trains steps 4..6: same layout as A -> losses identical to A's;
//      another layout -> within float tolerance of A's and of the single-rank
//      model's.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_store.h"
#include "checkpoint/loaded_checkpoint.h"
#include "parallel/process_groups.h"
#include "tests/support/tiny_gpt_run.h"
#include "trainer/trainer.h"

namespace cmpi {
namespace {

constexpr double kTolerance = 1e-5;  // relative: only the order of float sums differs
constexpr int64_t kSteps = 6, kSaveAt = 3;

struct Layout {
  int dp = 1, tp = 1, pp = 1, zero = 0;
  int ranks() const { return dp * tp * pp; }
  std::string name() const {
    return "dp" + std::to_string(dp) + "tp" + std::to_string(tp) + "pp" + std::to_string(pp) + "z" +
           std::to_string(zero);
  }
};

trainer::Config test_config(const std::string& checkpoint_dir) {
  trainer::Config c = testing::tiny_gpt_config(77);
  c.model.layers = 4;  // room for 4 pipeline stages
  c.training.steps = kSteps;
  c.parallel.dp_bucket_bytes = 16 << 10;  // several buckets: shards cut inside parameters
  c.checkpoint.dir = checkpoint_dir;
  c.checkpoint.every = kSaveAt;
  return c;
}

std::string shared_temp_dir() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char path[256] = {};
  if (rank == 0) {
    std::strcpy(path, "/tmp/cmpi_ckpt_XXXXXX");
    if (!mkdtemp(path)) path[0] = 0;
  }
  MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
  return path;
}

// Runs `body` on a communicator of the first layout.ranks() world ranks;
// returns its losses broadcast to every world rank.
template <typename Body>
std::vector<double> on_ranks_of(const Layout& layout, Body body) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm comm;
  MPI_Comm_split(MPI_COMM_WORLD, rank < layout.ranks() ? 0 : MPI_UNDEFINED, rank, &comm);
  std::vector<double> losses(kSteps, 0.0);
  int count = 0;
  if (comm != MPI_COMM_NULL) {
    parallel::ParallelDims dims;
    dims.dp = layout.dp;
    dims.tp = layout.tp;
    dims.pp = layout.pp;
    dims.zero_stage = layout.zero;
    parallel::ProcessGroups groups(comm, dims, comm::PolicyConfig{});
    const auto got = body(groups);
    count = int(got.size());
    std::copy(got.begin(), got.end(), losses.begin());
    MPI_Comm_free(&comm);
  }
  MPI_Bcast(&count, 1, MPI_INT, 0, MPI_COMM_WORLD);
  losses.resize(size_t(count));
  MPI_Bcast(losses.data(), count, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return losses;
}

trainer::TrainerOptions quiet() {
  trainer::TrainerOptions options;
  options.print_every = 0;
  return options;
}

void expect_same_state(const std::string& saved, const std::string& reloaded,
                       const std::string& what) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) return;
  const auto a = checkpoint::LoadedCheckpoint::read(saved, nullptr);
  const auto b = checkpoint::LoadedCheckpoint::read(reloaded, nullptr);
  ASSERT_EQ(a.names(), b.names()) << what;
  EXPECT_EQ(a.metadata().optimizer_steps, b.metadata().optimizer_steps) << what;
  for (const auto& name : a.names()) {
    const auto x = a.assemble(name), y = b.assemble(name);
    ASSERT_EQ(x.shape, y.shape) << what << " " << name;
    const size_t bytes = x.values.size() * sizeof(float);
    EXPECT_EQ(std::memcmp(x.values.data(), y.values.data(), bytes), 0) << what << " " << name;
    EXPECT_EQ(std::memcmp(x.exp_avg.data(), y.exp_avg.data(), bytes), 0) << what << " " << name;
    EXPECT_EQ(std::memcmp(x.exp_avg_sq.data(), y.exp_avg_sq.data(), bytes), 0)
        << what << " " << name;
  }
}

void check_case(const Layout& from, const Layout& to, const std::vector<double>& single_rank,
                const std::string& root) {
  const std::string what = from.name() + " -> " + to.name();
  SCOPED_TRACE(what);
  const std::string dir_a = root + "/" + what + "/a", dir_b = root + "/" + what + "/b";
  const auto original = on_ranks_of(from, [&](parallel::ProcessGroups& groups) {
    const auto config = test_config(dir_a);  // the trainer keeps a reference
    trainer::Trainer t(config, groups, quiet());
    return t.run().losses;
  });
  ASSERT_EQ(original.size(), size_t(kSteps));
  const std::string saved = dir_a + "/" + checkpoint::checkpoint_name(kSaveAt);
  const auto resumed = on_ranks_of(to, [&](parallel::ProcessGroups& groups) {
    auto options = quiet();
    options.resume_path = saved;
    const auto config = test_config(dir_b);
    trainer::Trainer t(config, groups, options);
    t.save_checkpoint();
    return t.run().losses;
  });
  MPI_Barrier(MPI_COMM_WORLD);
  expect_same_state(saved, dir_b + "/" + checkpoint::checkpoint_name(kSaveAt), what);
  ASSERT_EQ(resumed.size(), size_t(kSteps - kSaveAt));
  const std::vector<double> after(original.begin() + kSaveAt, original.end());
  const std::vector<double> single_after(single_rank.begin() + kSaveAt, single_rank.end());
  if (from.name() == to.name()) {
    EXPECT_EQ(resumed, after) << "same layout: resuming must be bit-exact";
  } else {
    testing::expect_same_trajectory(after, resumed, kTolerance, what + " vs original layout");
  }
  testing::expect_same_trajectory(single_after, resumed, kTolerance, what + " vs 1 rank");
}

class CheckpointReshard : public ::testing::Test {
 protected:
  void SetUp() override {
    int world = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    ASSERT_EQ(world, 8) << "run this test on 8 ranks";
    root_ = shared_temp_dir();
    ASSERT_FALSE(root_.empty());
    auto config = test_config("");
    config.checkpoint.every = 0;
    single_rank_ = testing::single_rank_losses(config);
  }
  void TearDown() override {
    MPI_Barrier(MPI_COMM_WORLD);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0 && !root_.empty()) std::filesystem::remove_all(root_);
  }
  std::string root_;
  std::vector<double> single_rank_;
};

TEST_F(CheckpointReshard, SameLayoutResumesBitExact) {
  for (const Layout& l :
       {Layout{4, 1, 1, 0}, Layout{2, 1, 1, 1}, Layout{4, 1, 1, 2}, Layout{2, 2, 1, 3},
        Layout{2, 1, 2, 1}, Layout{1, 2, 2, 0}, Layout{2, 2, 2, 2}})
    check_case(l, l, single_rank_, root_);
}

TEST_F(CheckpointReshard, DataParallelChangesUnderEveryZeroStage) {
  for (int zero = 0; zero <= 3; ++zero)
    check_case(Layout{2, 1, 1, zero}, Layout{4, 1, 1, zero}, single_rank_, root_);
  check_case(Layout{4, 1, 1, 3}, Layout{1, 1, 1, 0}, single_rank_, root_);
  check_case(Layout{4, 1, 2, 1}, Layout{2, 1, 1, 3}, single_rank_, root_);
}

TEST_F(CheckpointReshard, TensorParallelChanges) {
  check_case(Layout{1, 2, 1, 0}, Layout{1, 1, 1, 0}, single_rank_, root_);
  check_case(Layout{1, 1, 1, 0}, Layout{1, 4, 1, 0}, single_rank_, root_);
  check_case(Layout{1, 4, 1, 0}, Layout{2, 2, 1, 2}, single_rank_, root_);
}

TEST_F(CheckpointReshard, PipelineChanges) {
  check_case(Layout{1, 1, 2, 0}, Layout{1, 1, 1, 0}, single_rank_, root_);
  check_case(Layout{1, 1, 1, 0}, Layout{1, 1, 4, 0}, single_rank_, root_);
  check_case(Layout{2, 1, 4, 3}, Layout{1, 2, 2, 1}, single_rank_, root_);
}

TEST_F(CheckpointReshard, EveryAxisAtOnce) {
  check_case(Layout{2, 2, 2, 2}, Layout{1, 1, 1, 0}, single_rank_, root_);
  check_case(Layout{1, 1, 1, 0}, Layout{2, 2, 2, 3}, single_rank_, root_);
}

}  // namespace
}  // namespace cmpi
