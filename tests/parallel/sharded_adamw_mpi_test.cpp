// ShardedAdamW (parallel/zero/sharded_adamw.h), ZeRO's optimizer step on
// tensors: its multi-tensor form, the one that runs where tensors live
// (a GPU's), forced here on the CPU, gives the host loops' parameters and
// moments within a few float roundings over several steps, for runs
// addressed in a flat buffer and in a shard, with and without weight decay,
// and leaves every element outside this rank's runs alone; the global norm is
// the same in both forms, and the owned pieces summed over the zero group
// give the whole buffer's norm, without the parameter another stage counts.
// Random data from the printed seed.
#include <gtest/gtest.h>
#include <mpi.h>
#include <torch/torch.h>

#include <cmath>
#include <string>
#include <vector>

#include "parallel/mesh/process_groups.h"
#include "parallel/zero/sharded_adamw.h"
#include "tests/support/mpi_world.h"
#include "tests/support/test_seed.h"

namespace cmpi::parallel {
namespace {

std::vector<FlatParam> mixed_params() {
  std::vector<FlatParam> params(4);
  const size_t sizes[] = {13, 64, 7, 33};
  for (size_t i = 0; i < params.size(); ++i) {
    params[i].name = "p" + std::to_string(i);
    params[i].numel = sizes[i];
    params[i].weight_decay = i % 2 == 0;
    params[i].tensor_parallel = i == 1;
  }
  params[2].counted_on_other_stage = true;
  return params;
}

torch::Tensor random_buffer(torch::Generator& rng, size_t n) {
  return torch::randn({int64_t(n)}, rng, torch::kFloat);
}

// Largest |a - b| / max(1, |b|) over the elements.
double max_relative_difference(const torch::Tensor& a, const torch::Tensor& b) {
  return ((a - b).abs() / b.abs().clamp_min(1.0)).max().item<double>();
}

TEST(ShardedAdamW, TensorOpsGiveTheHostLoopsUpdateWithinFloatRounding) {
  const uint64_t seed = cmpi::testing::test_seed();
  const int dp = 2;
  for (const int rank : {0, 1}) {
    const ZeroLayout layout(mixed_params(), dp, rank, /*bucket_bytes=*/96);
    for (const auto address : {RunAddress::kFlat, RunAddress::kShard}) {
      const std::string what = "dp rank " + std::to_string(rank) +
                               (address == RunAddress::kFlat ? ", flat" : ", shard") + " (seed " +
                               std::to_string(seed) + ")";
      AdamWOptions options;
      options.beta2 = 0.95;
      options.weight_decay = 0.1;
      ShardedAdamW loops(options, layout, layout.owned_segments(), layout.shard_size(),
                         torch::kFloat, ShardedAdamW::Kernels::kHostLoops);
      ShardedAdamW tensors(options, layout, layout.owned_segments(), layout.shard_size(),
                           torch::kFloat, ShardedAdamW::Kernels::kTensorOps);
      auto rng = at::make_generator<at::CPUGeneratorImpl>(seed + uint64_t(rank));
      const size_t size = address == RunAddress::kFlat ? layout.padded() : layout.shard_size();
      const auto initial = random_buffer(rng, size);
      auto params_loops = initial.clone(), params_tensors = initial.clone();
      for (int step = 1; step <= 3; ++step) {
        const auto grads = random_buffer(rng, size) * (step == 2 ? 1e-3 : 1.0);
        loops.update(3e-3, {params_loops, address}, {grads, address});
        tensors.update(3e-3, {params_tensors, address}, {grads, address});
      }
      EXPECT_EQ(tensors.steps(), 3) << what;
      EXPECT_LE(max_relative_difference(params_tensors, params_loops), 1e-6) << what;
      EXPECT_LE(max_relative_difference(tensors.exp_avg(), loops.exp_avg()), 1e-6) << what;
      EXPECT_LE(max_relative_difference(tensors.exp_avg_sq(), loops.exp_avg_sq()), 1e-6) << what;
      // Both moved what they own, and nothing else.
      auto owned = torch::zeros({int64_t(size)}, torch::kBool);
      for (const auto& run : layout.owned_segments())
        owned
            .narrow(0, int64_t(address == RunAddress::kFlat ? run.flat_offset : run.shard_offset),
                    int64_t(run.length))
            .fill_(true);
      EXPECT_TRUE(params_tensors.masked_select(owned.logical_not())
                      .equal(initial.masked_select(owned.logical_not())))
          << what;
      EXPECT_FALSE(params_tensors.masked_select(owned).equal(initial.masked_select(owned))) << what;
    }
  }
}

TEST(ShardedAdamW, GlobalNormIsTheSameInBothFormsAndOverOwnedPieces) {
  const uint64_t seed = cmpi::testing::test_seed();
  const int world = cmpi::testing::world_size();
  ParallelDims dims;
  dims.dp = world;
  ProcessGroups groups(MPI_COMM_WORLD, dims);
  const ZeroLayout layout(mixed_params(), world, groups.dp().rank(), /*bucket_bytes=*/64);
  // The same gradient on every rank: the owned pieces partition it.
  auto rng = at::make_generator<at::CPUGeneratorImpl>(seed);
  const auto grads = random_buffer(rng, layout.padded());
  double expected = 0;
  for (size_t i = 0; i < layout.params().size(); ++i)
    if (!layout.params()[i].counted_on_other_stage)
      expected += grads.narrow(0, int64_t(layout.offsets()[i]), int64_t(layout.params()[i].numel))
                      .to(torch::kDouble)
                      .pow(2)
                      .sum()
                      .item<double>();
  expected = std::sqrt(expected);
  const std::string what =
      "world " + std::to_string(world) + " (seed " + std::to_string(seed) + ")";
  for (const auto kernels :
       {ShardedAdamW::Kernels::kHostLoops, ShardedAdamW::Kernels::kTensorOps}) {
    const ShardedAdamW step(AdamWOptions{}, layout, layout.owned_segments(), layout.shard_size(),
                            torch::kFloat, kernels);
    const double whole =
        step.global_norm({grads, RunAddress::kFlat}, layout.whole_segments(), false, groups);
    const double owned =
        step.global_norm({grads, RunAddress::kFlat}, layout.owned_segments(), true, groups);
    EXPECT_NEAR(whole, expected, 1e-6 * expected) << what;
    // Over zero the partial sums travel as float.
    EXPECT_NEAR(owned, expected, 1e-6 * expected) << what;
  }
}

}  // namespace
}  // namespace cmpi::parallel
