// Gradient reduction overlapped with backward (overlap_grad_reduce) against
// the same optimizer reducing everything in step():
// - the optimizer over the world as dp at ZeRO 0–3, plain MPI and the
//   lossless identity and mpc codecs, two micro-batches, buckets cutting
//   through parameters: parameters and norms bit-identical, and every bucket
//   launched during backward — except behind an unused or a late parameter,
//   which step() launches;
// - the tiny GPT's loss trajectory through the trainer, bit-identical on
//   dp2 / dp4 at every stage, dp2+tp2 and dp2+pp2 (the tied embedding's
//   gradient is folded in over pp after backward);
// - a collective failing on the comm thread reaches step() as an error
//   naming the bucket and the group.
#include <gtest/gtest.h>
#include <mpi.h>
#include <torch/torch.h>

#include <set>
#include <string>
#include <vector>

#include "comm/policy_config.h"
#include "parallel/mesh/process_groups.h"
#include "parallel/zero/data_parallel_optimizer.h"
#include "tests/support/mpi_world.h"
#include "tests/support/seeded_tensor.h"
#include "tests/support/test_seed.h"
#include "tests/support/tiny_gpt_run.h"

namespace cmpi::parallel {
namespace {

using testing::world_size;

using testing::seeded_normal;

struct TestParam {
  std::string name;
  std::vector<int64_t> shape;
};

// Odd sizes: buckets and shards cut through parameters.
const std::vector<TestParam> kParams = {{"a.weight", {5, 7}},
                                        {"a.bias", {5}},
                                        {"b.weight", {9, 3}},
                                        {"norm", {11}},
                                        {"c.weight", {4, 6}}};
constexpr int kMicroBatches = 2;
constexpr int64_t kSteps = 4;

std::vector<ParamInfo> make_params(uint64_t seed) {
  std::vector<ParamInfo> params;
  for (size_t i = 0; i < kParams.size(); ++i)
    params.push_back({kParams[i].name,
                      seeded_normal(kParams[i].shape, seed + i).requires_grad_(true), false,
                      i % 2 == 0});
  return params;
}

torch::Tensor contribution(uint64_t seed, int64_t step, int rank, int micro, size_t i) {
  return seeded_normal(kParams[i].shape, seed ^ (uint64_t(step) << 40) ^ (uint64_t(rank) << 24) ^
                                             (uint64_t(micro) << 16) ^
                                             (i + 1) * 0x9E3779B97F4A7C15ull);
}

struct Trained {
  std::vector<float> parameters;  // after the last step, flat
  std::vector<double> norms;
  std::vector<GradReductionTimes> reductions;
};

struct RunSetup {
  int stage = 0;
  bool overlap = true;
  int64_t bucket_bytes = 16;  // per dp rank: 4 floats a piece, 7 buckets or more
  std::string unused;         // a parameter autograd never reaches
  std::set<std::string> late;
  comm::PolicyConfig policy;
};

// The trainer's call sequence, with d/dp Σ p·g = g per micro-batch; the
// late parameter gets its gradient doubled after backward, as the tied
// embedding's is summed over pp.
Trained train(const RunSetup& s, uint64_t seed) {
  ParallelDims dims;
  dims.dp = world_size();
  ProcessGroups groups(MPI_COMM_WORLD, dims, s.policy);
  DataParallelOptimizerOptions options;
  options.zero_stage = s.stage;
  options.bucket_bytes = s.bucket_bytes * dims.dp;
  options.overlap_grad_reduce = s.overlap;
  auto params = make_params(seed);
  for (auto& p : params) p.late_gradient = s.late.count(p.name) > 0;
  auto optimizer = make_data_parallel_optimizer(params, options, groups);
  Trained out;
  for (int64_t step = 0; step < kSteps; ++step) {
    optimizer->zero_grad();
    optimizer->before_forward();
    for (int m = 0; m < kMicroBatches; ++m) {
      torch::Tensor loss = torch::zeros({});
      for (size_t i = 0; i < params.size(); ++i)
        if (params[i].name != s.unused)
          loss =
              loss + (params[i].tensor * contribution(seed, step, groups.coord().dp, m, i)).sum();
      if (m + 1 == kMicroBatches) optimizer->begin_last_micro_batch();
      loss.backward();
    }
    for (auto& p : params)
      if (s.late.count(p.name)) {
        torch::NoGradGuard no_grad;
        p.tensor.grad().mul_(2.0f);
      }
    out.norms.push_back(optimizer->step(1e-2 * double(step + 1), step < 2 ? 0.0 : 2.0));
    out.reductions.push_back(optimizer->last_reduction());
  }
  optimizer->before_forward();  // stage 3: materialise the parameters
  for (auto& p : params) {
    auto flat = p.tensor.detach().reshape({-1});
    out.parameters.insert(out.parameters.end(), flat.data_ptr<float>(),
                          flat.data_ptr<float>() + flat.numel());
  }
  return out;
}

struct NamedPolicy {
  std::string name;
  comm::PolicyConfig policy;
};

std::vector<NamedPolicy> lossless_policies() {
  using comm::GroupKind;
  return {
      {"plain", {}},
      {"identity", cmpi::testing::every_message_of({GroupKind::kDp, GroupKind::kZero}, "identity")},
      {"mpc", cmpi::testing::every_message_of({GroupKind::kDp, GroupKind::kZero}, "mpc")}};
}

TEST(OverlapGradReduce, OptimizerIsBitIdenticalToReducingInStep) {
  const uint64_t seed = cmpi::testing::test_seed();
  for (const auto& policy : lossless_policies()) {
    for (int stage = 0; stage <= 3; ++stage) {
      for (int variant = 0; variant < 3; ++variant) {
        RunSetup s;
        s.stage = stage;
        s.policy = policy.policy;
        if (variant == 1) s.unused = "b.weight";
        if (variant == 2) s.late = {"a.bias"};
        const std::string what = policy.name + " stage " + std::to_string(stage) +
                                 (variant == 1 ? " unused b.weight" : "") +
                                 (variant == 2 ? " late a.bias" : "");
        s.overlap = false;
        const Trained reference = train(s, seed);
        s.overlap = true;
        const Trained overlapped = train(s, seed);
        EXPECT_EQ(overlapped.parameters, reference.parameters) << what;
        EXPECT_EQ(overlapped.norms, reference.norms) << what;
        for (int64_t step = 0; step < kSteps; ++step) {
          const auto& on = overlapped.reductions[size_t(step)];
          const auto& off = reference.reductions[size_t(step)];
          ASSERT_GT(on.buckets, 2) << what << ": buckets too large to test the order";
          EXPECT_EQ(on.buckets, off.buckets) << what;
          EXPECT_EQ(off.launched_during_backward, 0) << what;
          if (variant == 0)
            EXPECT_EQ(on.launched_during_backward, on.buckets) << what << " step " << step;
          else  // a.bias and b.weight sit in the middle: the buckets before them go early
            EXPECT_GT(on.launched_during_backward, 0) << what << " step " << step;
          if (variant != 0) EXPECT_LT(on.launched_during_backward, on.buckets) << what;
        }
      }
    }
  }
}

TEST(OverlapGradReduce, ACommThreadErrorReachesStepNamingBucketAndGroup) {
  // zfp refuses non-finite input (nonfinite: fail): every rank's gradient is
  // NaN, so every rank fails its first encode and none waits on another.
  RunSetup s;
  s.policy = cmpi::testing::every_message_of({comm::GroupKind::kDp}, "identity");
  s.policy.rules[0].codec =
      compress::CodecSpec("zfp", {{"mode", "rate"}, {"rate", "16"}, {"nonfinite", "fail"}});
  ParallelDims dims;
  dims.dp = world_size();
  ProcessGroups groups(MPI_COMM_WORLD, dims, s.policy);
  DataParallelOptimizerOptions options;
  options.bucket_bytes = 1 << 20;
  auto params = make_params(cmpi::testing::test_seed());
  auto optimizer = make_data_parallel_optimizer(params, options, groups);
  optimizer->zero_grad();
  optimizer->before_forward();
  torch::Tensor loss = torch::zeros({});
  for (auto& p : params) loss = loss + (p.tensor * std::nanf("")).sum();
  optimizer->begin_last_micro_batch();
  loss.backward();
  try {
    optimizer->step(1e-3, 0.0);
    FAIL() << "the comm thread's error was lost";
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("gradient bucket 0 of 1 (allreduce over dp)"), std::string::npos)
        << message;
    EXPECT_NE(message.find("nonfinite"), std::string::npos) << message;
  }
  EXPECT_EQ(optimizer->last_reduction().buckets, 0) << "a failed step reports nothing";
}

// ------------------------------------------------------------ the trainer

void expect_identical_trajectories(const config::Config& config, const ParallelDims& dims,
                                   const comm::PolicyConfig& policy, const std::string& what) {
  const int group = dims.dp * dims.tp * dims.pp;
  auto off = config;
  off.training.overlap_grad_reduce = false;
  auto on = config;
  on.training.overlap_grad_reduce = true;
  const auto reference = cmpi::testing::train_in_groups_of(group, off, dims, policy).losses;
  const auto overlapped = cmpi::testing::train_in_groups_of(group, on, dims, policy).losses;
  EXPECT_EQ(overlapped, reference) << what;
}

config::Config small_buckets(uint64_t seed) {
  auto config = cmpi::testing::tiny_gpt_config(seed);
  config.parallel.dp_bucket_bytes = 8 << 10;  // several buckets, cut through parameters
  config.training.grad_clip = 1.0;
  return config;
}

TEST(OverlapGradReduce, TrainerTrajectoryIsBitIdenticalOnDp) {
  const uint64_t seed = cmpi::testing::test_seed();
  for (int dp : {2, 4}) {
    if (world_size() % dp != 0) continue;
    auto config = small_buckets(seed);
    config.training.global_batch = 4 * dp;  // two micro-batches of 2 per rank
    ParallelDims dims;
    dims.dp = dp;
    for (const auto& policy : lossless_policies()) {
      if (dp == 4 && policy.name == "identity") continue;  // plain and mpc suffice there
      for (int stage = 0; stage <= 3; ++stage) {
        config.parallel.zero_stage = stage;
        dims.zero_stage = stage;
        expect_identical_trajectories(
            config, dims, policy.policy,
            "dp" + std::to_string(dp) + " " + policy.name + " stage " + std::to_string(stage));
      }
    }
  }
}

TEST(OverlapGradReduce, TrainerTrajectoryIsBitIdenticalWithTensorAndPipelineParallel) {
  if (world_size() % 4 != 0) GTEST_SKIP() << "needs a multiple of 4 ranks";
  const uint64_t seed = cmpi::testing::test_seed();
  const auto mpc = lossless_policies()[2].policy;
  for (int stage : {1, 2}) {
    auto config = small_buckets(seed);
    config.parallel.zero_stage = stage;
    ParallelDims dims;
    dims.dp = 2;
    dims.tp = 2;
    dims.zero_stage = stage;
    expect_identical_trajectories(config, dims, {}, "dp2 tp2 stage " + std::to_string(stage));
  }
  for (int stage : {0, 1, 3}) {
    auto config = small_buckets(seed);
    config.parallel.zero_stage = stage;
    config.training.global_batch = 16;  // four micro-batches per rank through the pipeline
    ParallelDims dims;
    dims.dp = 2;
    dims.pp = 2;
    dims.zero_stage = stage;
    expect_identical_trajectories(config, dims, stage == 1 ? mpc : comm::PolicyConfig{},
                                  "dp2 pp2 stage " + std::to_string(stage));
  }
}

}  // namespace
}  // namespace cmpi::parallel
