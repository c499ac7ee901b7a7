// The step's device-generic paths (run.device, models/attention.cpp's
// backends):
//  * AttentionBackend: LibTorch's fused scaled-dot-product attention, which
//    a CUDA run takes by default, follows the unfused softmax on the CPU
//    step by step (float32; multi-head with rotary, and grouped-query):
//    the same causal mask and scale, summed in another order;
//  * DeviceTraining, DeviceLayouts (label cuda; skipped, saying why, where
//    LibTorch sees no CUDA device): one rank on the GPU follows the same
//    run on the CPU, float32 and bf16, and with dropout its whole-block
//    recomputation follows the stored activations; two ranks sharing the GPU as dp2
//    (without compression and under zhybrid), tp2, pp2, dp2 ZeRO-1 and -2,
//    dp2 DiLoCo and cp2 follow the CPU runs of their layouts; within the
//    tolerances below.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "comm/policy_config.h"
#include "tests/support/mpi_world.h"
#include "tests/support/test_seed.h"
#include "tests/support/tiny_gpt_run.h"

namespace cmpi::trainer {
namespace {

using cmpi::testing::expect_same_trajectory;
using cmpi::testing::single_rank_losses;

// Fused vs unfused float32 attention on the CPU: sums in another order only
// (measured below 1e-6 per step over 10 steps).
constexpr double kFusedTolerance = 1e-5;
// The GPU against the CPU: other GEMM and reduction kernels, float32
// accumulation on both; bf16 rounds each difference to 2^-9 relative.
constexpr double kDeviceFloat32Tolerance = 1e-4;
constexpr double kDeviceBf16Tolerance = 1e-2;

config::Config with_backend(config::Config config, config::AttentionBackend backend) {
  config.model.attention_backend = backend;
  return config;
}

void fused_follows_unfused(const config::Config& config, const std::string& what) {
  const auto unfused = single_rank_losses(with_backend(config, config::AttentionBackend::kUnfused));
  const auto fused = single_rank_losses(with_backend(config, config::AttentionBackend::kFused));
  ASSERT_LT(unfused.back(), unfused.front()) << what << " should learn";
  expect_same_trajectory(unfused, fused, kFusedTolerance, what + " fused vs unfused");
}

TEST(AttentionBackend, FusedFollowsUnfusedOnTheCpu) {
  const uint64_t seed = cmpi::testing::test_seed() % 100000;
  fused_follows_unfused(cmpi::testing::tiny_neox_config(seed),
                        "neox (seed " + std::to_string(seed) + ")");
  fused_follows_unfused(cmpi::testing::tiny_llama_config(seed),
                        "llama, grouped-query (seed " + std::to_string(seed) + ")");
  auto recomputed = cmpi::testing::tiny_neox_config(seed);
  recomputed.training.recompute = "selective";  // the core replayed in backward
  fused_follows_unfused(recomputed,
                        "neox, selective recomputation (seed " + std::to_string(seed) + ")");
}

// Under attention dropout the fused kernel would draw from its own
// generator: auto and fused both run unfused then (identical losses).
TEST(AttentionBackend, AttentionDropoutRunsUnfusedWhateverTheBackend) {
  const uint64_t seed = cmpi::testing::test_seed() % 100000;
  auto config = cmpi::testing::tiny_neox_config(seed);
  config.model.dropout = 0.1;
  EXPECT_EQ(single_rank_losses(with_backend(config, config::AttentionBackend::kUnfused)),
            single_rank_losses(with_backend(config, config::AttentionBackend::kFused)))
      << "seed " << seed;
}

void device_follows_cpu(const std::string& precision, double tolerance) {
  if (torch::cuda::device_count() == 0)
    GTEST_SKIP() << "no CUDA device visible to LibTorch: the device run has nothing to run on";
  const uint64_t seed = cmpi::testing::test_seed() % 100000;
  auto config = cmpi::testing::tiny_neox_config(seed);
  config.training.precision = config::precision_named(precision);
  const auto cpu = single_rank_losses(config);
  config.run.device = config::RunDevice::kCuda;
  const auto cuda = single_rank_losses(config);
  ASSERT_LT(cuda.back(), cuda.front()) << precision << " on cuda should learn";
  expect_same_trajectory(cpu, cuda, tolerance,
                         precision + " cuda vs cpu (seed " + std::to_string(seed) + ")");
}

TEST(DeviceTraining, OneRankOnTheGpuFollowsTheCpuInFloat32) {
  device_follows_cpu("fp32", kDeviceFloat32Tolerance);
}

TEST(DeviceTraining, OneRankOnTheGpuFollowsTheCpuInBf16) {
  device_follows_cpu("bf16", kDeviceBf16Tolerance);
}

// Dropout on the GPU draws from the device's generator (the residual
// dropouts) and the CPU generators (the attention's): whole-block
// recomputation replays both, so its losses follow the run that keeps the
// activations (within the GPU's non-deterministic sums, e.g. the embedding
// gradient's atomics).
TEST(DeviceTraining, FullRecomputationReplaysTheDropoutMasks) {
  if (torch::cuda::device_count() == 0)
    GTEST_SKIP() << "no CUDA device visible to LibTorch: the device run has nothing to run on";
  const uint64_t seed = cmpi::testing::test_seed() % 100000;
  auto config = cmpi::testing::tiny_neox_config(seed);
  config.model.dropout = 0.1;
  config.run.device = config::RunDevice::kCuda;
  const auto stored = single_rank_losses(config);
  config.training.recompute = "full";
  expect_same_trajectory(
      stored, single_rank_losses(config), kDeviceFloat32Tolerance,
      "cuda, dropout 0.1, full recomputation vs none (seed " + std::to_string(seed) + ")");
}

// Two ranks sharing the one GPU (label cuda): each group's tensors staged
// through host memory and reduced as on the CPU. dp2 (without compression
// and under zhybrid), tp2, pp2, dp2 ZeRO-1 and -2 and cp2 each follow the CPU run of the same
// layout; under zhybrid (zfp on the gradients) within the codec's effect on
// slightly other gradients.
constexpr double kDeviceZhybridTolerance = 1e-2;

void layout_follows_cpu(const cmpi::testing::TinyGptRun& cpu, config::Config config,
                        const parallel::ParallelDims& dims, const comm::PolicyConfig& policy,
                        double tolerance, const std::string& what) {
  config.run.device = config::RunDevice::kCuda;
  const auto cuda = cmpi::testing::train_in_groups_of(2, config, dims, policy);
  expect_same_trajectory(cpu.losses, cuda.losses, tolerance, what + " cuda vs cpu");
}

TEST(DeviceLayouts, TwoRanksSharingOneGpuFollowTheCpuRunOfTheirLayout) {
  if (torch::cuda::device_count() == 0)
    GTEST_SKIP() << "no CUDA device visible to LibTorch: the device run has nothing to run on";
  ASSERT_EQ(cmpi::testing::world_size() % 2, 0) << "run this test on 2 ranks";
  const uint64_t seed = cmpi::testing::test_seed() % 100000;
  const std::string at_seed = " (seed " + std::to_string(seed) + ")";
  const auto config = cmpi::testing::tiny_neox_config(seed);
  for (const std::string preset : {"none", "zhybrid"}) {
    comm::PolicyConfig policy;
    policy.preset = preset;
    policy.preset_locality = "any";
    policy.min_bytes = 0;
    const auto dims = cmpi::testing::dims_of(2);
    layout_follows_cpu(cmpi::testing::train_in_groups_of(2, config, dims, policy), config, dims,
                       policy, preset == "none" ? kDeviceFloat32Tolerance : kDeviceZhybridTolerance,
                       "dp2 " + preset + at_seed);
  }
  for (const auto& [name, dims] :
       {std::pair<std::string, parallel::ParallelDims>{"tp2", cmpi::testing::dims_of(1, 2)},
        {"pp2", cmpi::testing::dims_of(1, 1, 2)}})
    layout_follows_cpu(cmpi::testing::train_in_groups_of(2, config, dims), config, dims, {},
                       kDeviceFloat32Tolerance, name + at_seed);
  for (int stage : {1, 2}) {
    const auto zero = cmpi::testing::with_zero(config, stage);
    const auto zero_dims = cmpi::testing::dims_of(2, 1, 1, stage);
    layout_follows_cpu(cmpi::testing::train_in_groups_of(2, zero, zero_dims), zero, zero_dims, {},
                       kDeviceFloat32Tolerance, "dp2 zero" + std::to_string(stage) + at_seed);
  }
  auto diloco = config;  // the replicas' pseudo-gradients through host memory
  diloco.parallel.data = 2;
  diloco.parallel.dp_sync = "diloco";
  diloco.parallel.diloco.sync_every = 4;
  diloco.parallel.diloco.fragments = 2;
  const auto diloco_dims = cmpi::testing::dims_of(2);
  layout_follows_cpu(cmpi::testing::train_in_groups_of(2, diloco, diloco_dims), diloco, diloco_dims,
                     {}, kDeviceFloat32Tolerance, "dp2 diloco" + at_seed);
  auto context = config;  // the ring attention's chunks through host memory
  context.parallel.context = 2;
  parallel::ParallelDims context_dims;
  context_dims.cp = 2;
  layout_follows_cpu(cmpi::testing::train_in_groups_of(2, context, context_dims), context,
                     context_dims, {}, kDeviceFloat32Tolerance, "cp2" + at_seed);
}

}  // namespace
}  // namespace cmpi::trainer
