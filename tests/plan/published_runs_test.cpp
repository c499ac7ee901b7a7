// The planner against published large-scale runs (docs/planner.md,
// "Validation against published runs"): each run's configuration
// (configs/published/) planned on its device and cluster profile, the
// planned TFLOP/s per GPU (FLOPs with recomputation, the count the papers
// publish) against the published figure. Rows marked fitted are those the
// A100's GEMM efficiency table was fitted on; the claim (within 15 %) is made
// for the others. The test prints the table docs/planner.md carries and fails
// when a row drifts past its tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "launch/checked_config.h"
#include "plan/plan_hardware.h"
#include "plan/step_plan.h"

namespace cmpi::plan {
namespace {

struct PublishedRun {
  const char* config;  // under configs/published/
  const char* device;
  const char* cluster;
  int gpus;
  double published_tflops;  // per GPU
  bool fitted;
  const char* source;
  // A row the plan misses by more than the target: held to the band it
  // misses by (docs/planner.md says why), so that a change that moves it is
  // seen either way.
  double known_miss_low = 0, known_miss_high = 0;
};

// Narayanan et al., SC'21: Table 1 (weak scaling) and Table 2 (PTD-P rows);
// Black et al. 2022 (GPT-NeoX-20B), section 3.
const std::vector<PublishedRun> kRuns = {
    {"megatron-1.7b", "a100-80gb", "selene", 32, 137, true, "Megatron-LM Table 1"},
    {"megatron-3.6b", "a100-80gb", "selene", 64, 138, false, "Megatron-LM Table 1"},
    {"megatron-7.5b", "a100-80gb", "selene", 128, 142, false, "Megatron-LM Table 1"},
    {"megatron-18.4b", "a100-80gb", "selene", 256, 135, false, "Megatron-LM Table 1"},
    {"megatron-39.1b", "a100-80gb", "selene", 512, 138, true, "Megatron-LM Table 1"},
    {"megatron-76.1b", "a100-80gb", "selene", 1024, 140, false, "Megatron-LM Table 1"},
    {"megatron-145.6b", "a100-80gb", "selene", 1536, 148, false, "Megatron-LM Table 1"},
    {"megatron-310.1b", "a100-80gb", "selene", 1920, 155, true, "Megatron-LM Table 1"},
    {"megatron-529.6b", "a100-80gb", "selene", 2520, 163, false, "Megatron-LM Table 1"},
    {"megatron-1t", "a100-80gb", "selene", 3072, 163, false, "Megatron-LM Table 1"},
    {"megatron-ptdp-174b-384", "a100-80gb", "selene", 384, 153, false, "Megatron-LM Table 2"},
    {"megatron-ptdp-174b-768", "a100-80gb", "selene", 768, 149, false, "Megatron-LM Table 2"},
    {"megatron-ptdp-174b-1536", "a100-80gb", "selene", 1536, 141, false, "Megatron-LM Table 2"},
    {"megatron-ptdp-529b-560", "a100-80gb", "selene", 560, 171, false, "Megatron-LM Table 2"},
    {"megatron-ptdp-529b-1120", "a100-80gb", "selene", 1120, 167, false, "Megatron-LM Table 2"},
    {"megatron-ptdp-529b-2240", "a100-80gb", "selene", 2240, 159, false, "Megatron-LM Table 2"},
    {"neox-20b", "a100-40gb", "neox-20b", 96, 117, false, "GPT-NeoX-20B, section 3", 1.2, 1.4},
};

constexpr double kTolerance = 0.15;

struct Planned {
  StepPlan plan;
  double tflops = 0;
};

Planned plan_run(const PublishedRun& run) {
  const config::Config c =
      launch::load_checked_config(std::string("configs/published/") + run.config + ".yaml");
  const parallel::ParallelDims dims = launch::validate_layout(c, run.gpus);
  PlanOptions o;
  o.world_size = run.gpus;
  use_cluster(o, load_cluster_profile(run.cluster));
  // The published runs predate fused flash attention (2021, 2022).
  use_device(o, load_device_profile(run.device), "materialized");
  CodecCostTable codecs(1.0, o.device->codecs);
  Planned p{plan_step(c, dims, o, codecs), 0};
  p.tflops = p.plan.hardware_flops_per_rank / 1e12;
  return p;
}

TEST(PublishedRuns, PlannedThroughputWithinToleranceOfPublished) {
  std::printf(
      "| run | GPUs | layout | published TFLOP/s per GPU | planned | planned / published "
      "| fitted | step parts |\n|---|--:|---|--:|--:|--:|---|---|\n");
  double worst = 0;
  for (const PublishedRun& run : kRuns) {
    const Planned p = plan_run(run);
    const double ratio = p.tflops / run.published_tflops;
    // The step's parts as shares of it, to see what moves a row.
    std::string parts;
    for (const StepPart& part : p.plan.parts) {
      char share[64];
      std::snprintf(share, sizeof share, "%s%s %.0f %%", parts.empty() ? "" : ", ",
                    part.name.c_str(), 100 * part.seconds / p.plan.step_seconds);
      parts += share;
    }
    std::printf("| %s (%s) | %d | %s | %.0f | %.1f | %.2f | %s | %s; bubble %.0f %% |\n",
                run.config, run.source, run.gpus, p.plan.dims.to_string().c_str(),
                run.published_tflops, p.tflops, ratio, run.fitted ? "fitted" : "no", parts.c_str(),
                100 * p.plan.bubble_fraction);
    if (run.known_miss_high > 0) {
      EXPECT_GE(ratio, run.known_miss_low) << run.config;
      EXPECT_LE(ratio, run.known_miss_high) << run.config;
      continue;
    }
    if (!run.fitted) worst = std::max(worst, std::abs(ratio - 1));
    EXPECT_NEAR(ratio, 1.0, kTolerance) << run.config << ": planned " << p.tflops
                                        << " TFLOP/s per GPU, published " << run.published_tflops;
  }
  std::printf("largest deviation on an unfitted row within the target: %.1f %%\n", 100 * worst);
}

// The plan line a user reads names the device and the achieved rate, and the
// same layout on the CPU's measured rate keeps the flat compute model.
TEST(PublishedRuns, DeviceProfileChangesOnlyTheDevicePlans) {
  const config::Config c = launch::load_checked_config("configs/published/megatron-1.7b.yaml");
  const parallel::ParallelDims dims = launch::validate_layout(c, 32);
  PlanOptions flat;
  flat.world_size = 32;
  flat.flops_per_second = 100e12;
  CodecCostTable codecs;
  const StepPlan cpu = plan_step(c, dims, flat, codecs);
  PlanOptions with_cpu = flat;
  use_device(with_cpu, load_device_profile("cpu"), "");
  const StepPlan same = plan_step(c, dims, with_cpu, codecs);
  EXPECT_DOUBLE_EQ(cpu.step_seconds, same.step_seconds);
  EXPECT_DOUBLE_EQ(cpu.stages[0].forward_seconds, same.stages[0].forward_seconds);
  // 100 TFLOP/s flat: the step's FLOPs over the step time give that rate back
  // when compute is all there is (one stage, buckets hidden or exposed aside).
  EXPECT_GT(cpu.hardware_flops_per_rank, 0);
  EXPECT_LE(cpu.hardware_flops_per_rank, 100e12 * 1.0001);
}

TEST(PublishedRuns, FlashAttentionRemovesTheScoresTraffic) {
  const config::Config c = launch::load_checked_config("configs/published/megatron-1.7b.yaml");
  const parallel::ParallelDims dims = launch::validate_layout(c, 32);
  PlanOptions o;
  o.world_size = 32;
  use_cluster(o, load_cluster_profile("selene"));
  use_device(o, load_device_profile("a100-80gb"), "materialized");
  CodecCostTable codecs;
  const StepPlan materialized = plan_step(c, dims, o, codecs);
  use_device(o, load_device_profile("a100-80gb"), "flash");
  const StepPlan flash = plan_step(c, dims, o, codecs);
  EXPECT_LT(flash.stages[0].forward_seconds, materialized.stages[0].forward_seconds);
  EXPECT_THROW(use_device(o, load_device_profile("v100"), "flash"), std::invalid_argument);
}

// A cluster's intra-node efficiency prices the tp collectives inside a node,
// its inter-node one the links between nodes.
TEST(PublishedRuns, ClusterEfficienciesPriceTheirOwnLinks) {
  const config::Config c = launch::load_checked_config("configs/published/megatron-18.4b.yaml");
  const parallel::ParallelDims dims = launch::validate_layout(c, 256);
  PlanOptions o;
  o.world_size = 256;
  use_cluster(o, load_cluster_profile("selene"));
  use_device(o, load_device_profile("a100-80gb"), "materialized");
  CodecCostTable codecs;
  const auto seconds = [&](const StepPlan& p, comm::GroupKind kind) {
    for (const GroupCost& g : p.stages[0].groups)
      if (g.group == kind) return g.seconds;
    return 0.0;
  };
  const StepPlan base = plan_step(c, dims, o, codecs);
  PlanOptions half_intra = o;
  half_intra.intra_link_efficiency = o.intra_link_efficiency / 2;
  const StepPlan slow_nvlink = plan_step(c, dims, half_intra, codecs);
  // tp (inside a node): its wire time doubles, its latency stays.
  EXPECT_GT(seconds(slow_nvlink, comm::GroupKind::kTp), 1.7 * seconds(base, comm::GroupKind::kTp));
  EXPECT_DOUBLE_EQ(seconds(slow_nvlink, comm::GroupKind::kDp), seconds(base, comm::GroupKind::kDp));
}

TEST(PublishedRuns, UnknownProfilesListTheKnownOnes) {
  try {
    load_device_profile("a100-96gb");
    FAIL() << "an unknown device was accepted";
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("--plan-device"), std::string::npos) << message;
    EXPECT_NE(message.find("a100-80gb"), std::string::npos) << message;
    EXPECT_NE(message.find("h200"), std::string::npos) << message;
  }
  try {
    load_cluster_profile("selene2");
    FAIL() << "an unknown cluster was accepted";
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("--plan-cluster"), std::string::npos) << message;
    EXPECT_NE(message.find("dgx-h100"), std::string::npos) << message;
  }
}

// A profile file a user writes: read whole, and a misspelt key is named
// with its file and line rather than read as a missing one.
TEST(PublishedRuns, ProfileFilesAreReadAndTheirErrorsNameFileAndKey) {
  const std::string file = testing::TempDir() + "cmpi_device_profile.yaml";
  const auto write = [&](const std::string& text) { std::ofstream(file) << text; };
  write(
      "name: my-gpu\npeak_flops: {fp16: 989e12}\nmemory: 80GB\nmemory_bandwidth: 3.35e12\n"
      "gemm_efficiency: [[1, 0.5], [256, 0.7]]\nflash_attention: true\n"
      "flash_attention_efficiency: 0.5\n");
  const DeviceProfile d = load_device_profile(file);
  EXPECT_EQ(d.name, "my-gpu");
  EXPECT_DOUBLE_EQ(d.peak_for(config::Precision::kFp16), 989e12);
  EXPECT_NEAR(d.gemm_efficiency_at(16e9), 0.6, 1e-12);  // halfway in log2 between 1 and 256
  EXPECT_THROW(d.peak_for(config::Precision::kBf16), std::invalid_argument);
  write(
      "name: my-gpu\npeak_flops: {fp16: 989e12}\nmemory: 80GB\nmemory_bandwidth: 3.35e12\n"
      "gemm_efficiency: [[1, 0.5], [256, 0.7]]\nflash_attention: true\n"
      "flash_attention_efficieny: 0.5\n");
  try {
    load_device_profile(file);
    FAIL() << "a misspelt key was accepted";
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(file + ":7"), std::string::npos) << message;
    EXPECT_NE(message.find("flash_attention_efficieny"), std::string::npos) << message;
  }
  write("name: c\ndevices_per_node: 4\nintra: 1200gbit/2us\ninter: fast\n");
  try {
    load_cluster_profile(file);
    FAIL() << "a bad link was accepted";
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(file + ":4"), std::string::npos) << message;
    EXPECT_NE(message.find("inter"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace cmpi::plan
