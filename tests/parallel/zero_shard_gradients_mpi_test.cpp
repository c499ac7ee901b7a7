// ZeRO-2/3 holding only the gradient shard (parallel.zero_gradient_memory:
// shard) against references a user trusts:
// - trajectories with two micro-batches per rank equal the 1-rank run within
//   a relative 1e-4 on dp2 (stages 2 and 3, per layer and per model, overlap
//   on and off), and on four ranks dp2+tp2 (the tp-replicated parameters'
//   exact buckets) and dp2+pp2 (the tied table packed once per step);
// - traffic: every micro-batch reduce-scatters its buckets, so a step with
//   M micro-batches makes M times full_buffer's reduce-scatter calls and
//   bytes (CommStats);
// - memory: on a GPT whose parameters outweigh its activations, every LibTorch
//   allocation of the steps counted, shard's peak is below full_buffer's by
//   at least 3/4 of the flat gradient buffer (it would equal it if the buffer were kept),
//   at ZeRO-2 and ZeRO-3; rank 0 prints the measured peaks beside the plan.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include "models/family/model_family.h"
#include "models/gpt.h"
#include "parallel/mesh/process_groups.h"
#include "tests/support/counting_allocator.h"
#include "tests/support/mpi_world.h"
#include "tests/support/test_seed.h"
#include "tests/support/tiny_gpt_run.h"
#include "trainer/trainer.h"

namespace cmpi::parallel {
namespace {

using cmpi::testing::dims_of;
using cmpi::testing::train_in_groups_of;
using cmpi::testing::world_rank;
using cmpi::testing::world_size;

config::Config shard_config(uint64_t seed, int stage, const std::string& memory) {
  config::Config c = cmpi::testing::with_zero(cmpi::testing::tiny_gpt_config(seed), stage);
  c.training.grad_clip = 0.5;            // below the early norms: clipping is exercised
  c.parallel.dp_bucket_bytes = 4 << 10;  // several buckets per block
  c.parallel.zero_gradient_memory = memory;
  return c;
}

void expect_matches(const std::vector<double>& reference, const config::Config& config,
                    const ParallelDims& dims, const std::string& what) {
  const int ranks = dims.dp * dims.tp * dims.pp;
  const auto run = train_in_groups_of(ranks, config, dims);
  cmpi::testing::expect_same_trajectory(reference, run.losses, 1e-4, what);
}

TEST(ZeroShardGradients, TrajectoriesMatchTheSingleRankRun) {
  const uint64_t seed = cmpi::testing::test_seed() % 100000;
  const auto reference = cmpi::testing::single_rank_losses(shard_config(seed, 0, "full_buffer"));
  // tiny_gpt_config: a global batch of 8 in micro-batches of 2, so dp2 runs
  // two micro-batches per rank and step.
  for (int stage : {2, 3}) {
    const std::string name = "zero" + std::to_string(stage) + " shard";
    expect_matches(reference, shard_config(seed, stage, "shard"), dims_of(2, 1, 1, stage),
                   "dp2 " + name);
    auto inline_reduction = shard_config(seed, stage, "shard");
    inline_reduction.training.overlap_grad_reduce = false;
    expect_matches(reference, inline_reduction, dims_of(2, 1, 1, stage),
                   "dp2 " + name + ", overlap off");
  }
  auto per_model = shard_config(seed, 3, "shard");
  per_model.parallel.zero3_gather = "model";
  expect_matches(reference, per_model, dims_of(2, 1, 1, 3), "dp2 zero3 shard, gather per model");
  if (world_size() < 4) return;
  for (int stage : {2, 3}) {
    const std::string name = "zero" + std::to_string(stage) + " shard";
    expect_matches(reference, shard_config(seed, stage, "shard"), dims_of(2, 2, 1, stage),
                   "dp2+tp2 " + name);
    expect_matches(reference, shard_config(seed, stage, "shard"), dims_of(2, 1, 2, stage),
                   "dp2+pp2 " + name + " (tied table on both ends)");
  }
}

// Two micro-batches per rank: shard reduce-scatters each bucket twice a step.
TEST(ZeroShardGradients, ReduceScattersEveryMicroBatch) {
  const uint64_t seed = cmpi::testing::test_seed() % 100000 + 5;
  for (int stage : {2, 3}) {
    const auto full =
        train_in_groups_of(2, shard_config(seed, stage, "full_buffer"), dims_of(2, 1, 1, stage));
    const auto shard =
        train_in_groups_of(2, shard_config(seed, stage, "shard"), dims_of(2, 1, 1, stage));
    const std::string what = "dp2 zero" + std::to_string(stage);
    ASSERT_GT(full.zero_reduce_scatter.calls, 0u) << what;
    EXPECT_EQ(shard.zero_reduce_scatter.calls, 2 * full.zero_reduce_scatter.calls) << what;
    EXPECT_EQ(shard.zero_reduce_scatter.raw_bytes, 2 * full.zero_reduce_scatter.raw_bytes) << what;
    EXPECT_EQ(shard.zero_allgather.raw_bytes, full.zero_allgather.raw_bytes) << what;
  }
}

// Parameters of 4 blocks of hidden 128 (3.2 MB of float32 on one rank)
// against a few hundred KB of activations (micro-batches of one sequence
// of 16 tokens), in buckets of 64 KiB.
config::Config parameter_heavy_config(uint64_t seed, int stage, const std::string& memory) {
  config::Config c = shard_config(seed, stage, memory);
  c.model.hidden = 128;
  c.model.layers = 4;
  c.training.micro_batch = 1;
  c.training.global_batch = 4;  // two micro-batches per rank on dp2
  c.training.steps = 2;
  c.training.warmup_steps = 1;
  c.parallel.dp_bucket_bytes = 64 << 10;
  return c;
}

TEST(ZeroShardGradients, PeakMemoryHoldsNoFullGradientBuffer) {
  const uint64_t seed = cmpi::testing::test_seed() % 100000 + 9;
  if (world_rank() == 0)
    std::printf(
        "| dp2, 2 micro-batches | step peak above the built model (measured) | gradients "
        "(plan) |\n|---|--:|--:|\n");
  const auto measure = [&](int stage, const std::string& memory) {
    const auto config = parameter_heavy_config(seed, stage, memory);
    const auto dims = dims_of(2, 1, 1, stage);
    int64_t peak = 0;
    MPI_Comm pair;
    MPI_Comm_split(MPI_COMM_WORLD, world_rank() / 2, world_rank(), &pair);
    {
      // The steps' peak: built before counting starts, so that the model's
      // construction (its parameters copied into the flat buffer) is left out.
      cmpi::testing::CountedAllocations counted;
      ProcessGroups groups(pair, dims, {});
      trainer::TrainerOptions options;
      options.print_every = 0;
      trainer::Trainer trainer(config, groups, options);
      counted.start();
      trainer.run();
      peak = counted.peak_above_start();
    }
    MPI_Comm_free(&pair);
    int64_t largest = 0;
    MPI_Allreduce(&peak, &largest, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    const auto plan = models::estimate_stage_memory(config, dims).at(0);
    if (world_rank() == 0)
      std::printf("| ZeRO-%d %s | %.2f MB | %.2f MB |\n", stage, memory.c_str(),
                  double(largest) / 1e6, double(plan.gradient_bytes) / 1e6);
    return largest;
  };
  measure(1, "full_buffer");
  const auto config = parameter_heavy_config(seed, 2, "shard");
  models::GptOptions shape;
  shape.vocab_size = config.model.vocab_size;
  shape.seq_len = config.model.seq_len;
  shape.layers = config.model.layers;
  shape.hidden = config.model.hidden;
  shape.heads = config.model.heads;
  const double flat_gradients = double(shape.parameter_count()) * sizeof(float);
  for (int stage : {2, 3}) {
    const int64_t full = measure(stage, "full_buffer");
    const int64_t shard = measure(stage, "shard");
    EXPECT_LT(double(shard), double(full) - 0.75 * flat_gradients)
        << "ZeRO-" << stage << ": shard peaks at " << shard << " bytes, full_buffer at " << full
        << ", the flat gradient buffer is " << flat_gradients << " bytes (seed " << seed << ")";
  }
}

}  // namespace
}  // namespace cmpi::parallel
