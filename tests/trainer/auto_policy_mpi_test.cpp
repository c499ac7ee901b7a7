// Preset auto in the trainer (4 ranks): dp2 and dp2 x tp2 runs train, log
// their decisions in metrics.jsonl, and follow the raw run's loss
// trajectory within a tolerance a lossy codec with error feedback keeps.
#include <gtest/gtest.h>
#include <mpi.h>

#include <fstream>
#include <sstream>
#include <string>

#include "parallel/mesh/process_groups.h"
#include "tests/io/scratch_dir.h"
#include "tests/support/test_seed.h"
#include "tests/support/tiny_gpt_run.h"
#include "trainer/trainer.h"

namespace cmpi::trainer {
namespace {

constexpr double kTolerance = 2e-2;  // relative, per step: what zfp rate 8 + feedback keeps

comm::PolicyConfig policy(const std::string& preset) {
  comm::PolicyConfig p;
  p.preset = preset;
  p.preset_locality = "any";  // one machine: every group is intra-node
  p.min_bytes = 0;            // the tiny model's messages are small
  return p;
}

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

struct AutoRun {
  std::vector<double> losses;
  std::string metrics;  // world rank 0's metrics.jsonl
};

// Trains on groups of `group_size` consecutive world ranks; world rank 0
// writes metrics.jsonl.
AutoRun train(int group_size, const config::Config& config, const parallel::ParallelDims& dims,
              const comm::PolicyConfig& policy) {
  io::testing::ScratchDir dir;
  MPI_Comm group;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank() / group_size, world_rank(), &group);
  AutoRun run;
  {
    parallel::ProcessGroups groups(group, dims, policy);
    TrainerOptions options;
    options.print_every = 0;
    if (world_rank() == 0) options.run_dir = dir.path();
    Trainer trainer(config, groups, options);
    run.losses = trainer.run().losses;
  }
  MPI_Comm_free(&group);
  if (world_rank() == 0) {
    std::ifstream in(dir.file("metrics.jsonl"));
    std::stringstream text;
    text << in.rdbuf();
    run.metrics = text.str();
  }
  return run;
}

void expect_decisions_logged(const std::string& metrics, const std::string& group) {
  if (world_rank() != 0) return;
  std::istringstream lines(metrics);
  std::string line;
  int records = 0, with_decisions = 0;
  while (std::getline(lines, line)) {
    ++records;
    ASSERT_NE(line.find(",\"auto\":{\"ms\":"), std::string::npos) << line;
    if (line.find("\"group\":\"" + group + "\"") == std::string::npos) continue;
    ++with_decisions;
    for (const char* field :
         {"\"op\":", "\"role\":", "\"codec\":", "\"reason\":", "\"predicted_ms\":", "\"raw_ms\":",
          "\"link_mbit_s\":", "\"previous_predicted_ms\":", "\"measured_ms\":"})
      EXPECT_NE(line.find(field), std::string::npos) << field << " missing in " << line;
  }
  EXPECT_EQ(records, 10);
  // Every step after the first has the previous step's gradient traffic.
  EXPECT_GE(with_decisions, 9) << metrics;
}

TEST(AutoPolicy, DataParallelTrainsAndLogsDecisions) {
  int world = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  ASSERT_EQ(world, 4) << "run this test on 4 ranks";
  const config::Config config = cmpi::testing::tiny_gpt_config(cmpi::testing::test_seed() % 100000);
  parallel::ParallelDims dims;
  dims.dp = 2;
  const AutoRun raw = train(2, config, dims, policy("none"));
  const AutoRun adaptive = train(2, config, dims, policy("auto"));
  cmpi::testing::expect_same_trajectory(raw.losses, adaptive.losses, kTolerance, "dp2 auto");
  expect_decisions_logged(adaptive.metrics, "dp");
}

TEST(AutoPolicy, DataAndTensorParallelTrainsAndLogsDecisions) {
  const config::Config config = cmpi::testing::tiny_gpt_config(cmpi::testing::test_seed() % 100000);
  parallel::ParallelDims dims;
  dims.dp = 2;
  dims.tp = 2;
  const AutoRun raw = train(4, config, dims, policy("none"));
  const AutoRun adaptive = train(4, config, dims, policy("auto"));
  cmpi::testing::expect_same_trajectory(raw.losses, adaptive.losses, kTolerance, "dp2 x tp2 auto");
  expect_decisions_logged(adaptive.metrics, "dp");
  if (world_rank() == 0)
    EXPECT_NE(adaptive.metrics.find("\"group\":\"tp\""), std::string::npos)
        << "tp traffic should be decided too";
}

}  // namespace
}  // namespace cmpi::trainer
