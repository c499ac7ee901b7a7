// The data-parallel optimizer on a NaN: one rank's gradient gets a NaN after
// backward; at ZeRO stages 0–3 step() must return a non-finite norm, report
// the step skipped on every rank, name the parameter (the culprit's own
// gradient, and the reduced gradient where a rank holds it) and change
// nothing: weights stay bit for bit, and a later finite step lands exactly
// where an optimizer that never saw the NaN step lands (so the AdamW moments
// and step count did not move either).
#include <gtest/gtest.h>
#include <mpi.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "parallel/mesh/process_groups.h"
#include "parallel/zero/data_parallel_optimizer.h"
#include "tests/support/mpi_world.h"
#include "tests/support/seeded_tensor.h"
#include "tests/support/test_seed.h"

namespace cmpi::parallel {
namespace {

using testing::world_rank;
using testing::world_size;

struct Shape {
  std::string name;
  std::vector<int64_t> dims;
};
// Odd sizes: buckets and shards cut through parameters.
const std::vector<Shape> kShapes = {{"a.weight", {5, 7}}, {"b.weight", {9, 3}}, {"c.bias", {11}}};
constexpr size_t kPoisoned = 1;  // b.weight

using testing::seeded_normal;

std::vector<ParamInfo> make_params(uint64_t seed) {
  std::vector<ParamInfo> params;
  for (size_t i = 0; i < kShapes.size(); ++i)
    params.push_back({kShapes[i].name,
                      seeded_normal(kShapes[i].dims, seed + i).requires_grad_(true), false,
                      i != 2});
  return params;
}

// One step as the trainer runs it; `poison` puts a NaN into parameter
// kPoisoned's accumulated gradient after backward, before step().
double run_step(DataParallelOptimizer& optimizer, std::vector<ParamInfo>& params, uint64_t seed,
                int64_t step, bool poison) {
  optimizer.zero_grad();
  optimizer.before_forward();
  torch::Tensor loss = torch::zeros({});
  for (size_t i = 0; i < params.size(); ++i)
    loss = loss + (params[i].tensor *
                   seeded_normal(kShapes[i].dims, seed ^ (uint64_t(step) << 32) ^
                                                      (uint64_t(world_rank()) << 20) ^ (i + 7)))
                      .sum();
  loss.backward();
  if (poison) {
    torch::NoGradGuard no_grad;
    params[kPoisoned].tensor.mutable_grad().view({-1})[4] = std::numeric_limits<float>::quiet_NaN();
  }
  return optimizer.step(1e-2, /*max_grad_norm=*/1.0);
}

std::vector<float> flat_weights(DataParallelOptimizer& optimizer, std::vector<ParamInfo>& params) {
  optimizer.before_forward();  // stage 3: materialise the parameters
  std::vector<float> out;
  for (const auto& p : params) {
    auto flat = p.tensor.detach().reshape({-1}).contiguous();
    out.insert(out.end(), flat.data_ptr<float>(), flat.data_ptr<float>() + flat.numel());
  }
  return out;
}

TEST(ZeroOptimizer, NonFiniteGradientOnOneRankSkipsTheUpdateEverywhere) {
  const uint64_t seed = cmpi::testing::test_seed();
  const int dp = world_size();
  const int culprit = dp - 1;
  ParallelDims dims;
  dims.dp = dp;
  ProcessGroups groups(MPI_COMM_WORLD, dims);

  for (int stage = 0; stage <= 3; ++stage) {
    const std::string what = "stage " + std::to_string(stage);
    DataParallelOptimizerOptions options;
    options.zero_stage = stage;
    options.bucket_bytes = 64 * dp;  // several buckets
    auto params = make_params(seed);
    auto optimizer = make_data_parallel_optimizer(params, options, groups);
    auto clean_params = make_params(seed);
    auto clean = make_data_parallel_optimizer(clean_params, options, groups);

    ASSERT_TRUE(std::isfinite(run_step(*optimizer, params, seed, 0, false))) << what;
    EXPECT_FALSE(optimizer->last_step_skipped()) << what;
    run_step(*clean, clean_params, seed, 0, false);
    const std::vector<float> before = flat_weights(*optimizer, params);

    const double norm = run_step(*optimizer, params, seed, 1, world_rank() == culprit);
    EXPECT_FALSE(std::isfinite(norm)) << what;
    EXPECT_TRUE(optimizer->last_step_skipped()) << what;
    const auto& found = optimizer->last_nonfinite_gradients();
    if (world_rank() == culprit)
      EXPECT_EQ(found.own_param, "b.weight") << what;
    else
      EXPECT_EQ(found.own_param, "") << what << ": this rank's own gradient was finite";
    // Stage 0 holds the whole reduced gradient; 1-3 only their pieces.
    const int holders = dp > 1 && !found.reduced_param.empty() ? 1 : 0;
    int ranks_holding = 0;
    MPI_Allreduce(&holders, &ranks_holding, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (dp > 1) {
      EXPECT_GE(ranks_holding, 1) << what;
      if (stage == 0) EXPECT_EQ(ranks_holding, dp) << what;
      if (!found.reduced_param.empty()) EXPECT_EQ(found.reduced_param, "b.weight") << what;
    } else {
      EXPECT_EQ(found.reduced_param, "") << what << ": dp = 1 reduces nothing";
    }
    EXPECT_EQ(flat_weights(*optimizer, params), before) << what << ": weights changed";

    // A finite step after the skipped one lands where one without it does.
    EXPECT_TRUE(std::isfinite(run_step(*optimizer, params, seed, 2, false))) << what;
    EXPECT_FALSE(optimizer->last_step_skipped()) << what;
    EXPECT_EQ(optimizer->last_nonfinite_gradients().own_param, "") << what;
    run_step(*clean, clean_params, seed, 2, false);
    EXPECT_EQ(flat_weights(*optimizer, params), flat_weights(*clean, clean_params))
        << what << ": the skipped step moved the AdamW state";
  }
}

}  // namespace
}  // namespace cmpi::parallel
