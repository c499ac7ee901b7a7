#include "tests/support/tiny_gpt_run.h"

#include <gtest/gtest.h>

#include <cmath>

#include "parallel/process_groups.h"
#include "trainer/trainer.h"

namespace cmpi::testing {

trainer::Config tiny_gpt_config(uint64_t seed) {
  trainer::Config c;
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
  return c;
}

TinyGptRun train_tiny_gpt(MPI_Comm comm, const trainer::Config& config,
                          const parallel::ParallelDims& dims, const comm::PolicyConfig& policy) {
  parallel::ProcessGroups groups(comm, dims, policy);
  trainer::TrainerOptions options;
  options.print_every = 0;
  trainer::Trainer trainer(config, groups, options);
  TinyGptRun run;
  const trainer::TrainResult result = trainer.run();
  run.losses = result.losses;
  run.val_losses = result.val_losses;
  run.zero_traffic = groups.zero().stats().total();
  run.peak_gathered_parameter_bytes = result.peak_gathered_parameter_bytes;
  return run;
}

TinyGptRun train_in_groups_of(int group_size, const trainer::Config& config,
                              const parallel::ParallelDims& dims,
                              const comm::PolicyConfig& policy) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm group;
  MPI_Comm_split(MPI_COMM_WORLD, rank / group_size, rank, &group);
  TinyGptRun run = train_tiny_gpt(group, config, dims, policy);
  MPI_Comm_free(&group);
  return run;
}

std::vector<double> single_rank_losses(const trainer::Config& config) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::vector<double> losses(size_t(config.training.steps));
  if (rank == 0) losses = train_tiny_gpt(MPI_COMM_SELF, config, parallel::ParallelDims{}).losses;
  MPI_Bcast(losses.data(), int(losses.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return losses;
}

void expect_same_trajectory(const std::vector<double>& reference, const std::vector<double>& losses,
                            double relative_tolerance, const std::string& what) {
  ASSERT_EQ(reference.size(), losses.size()) << what;
  for (size_t i = 0; i < reference.size(); ++i)
    EXPECT_LE(std::abs(losses[i] - reference[i]) / std::abs(reference[i]), relative_tolerance)
        << what << " step " << i + 1 << ": " << losses[i] << " vs 1-rank " << reference[i];
}

comm::PolicyConfig every_message_of(const std::vector<comm::GroupKind>& groups,
                                    const std::string& codec) {
  comm::PolicyConfig policy;
  comm::PolicyRule rule;
  rule.match.groups = groups;
  rule.match.min_bytes = 0;
  rule.codec = compress::CodecSpec(codec);
  policy.rules.push_back(rule);
  return policy;
}

}  // namespace cmpi::testing
