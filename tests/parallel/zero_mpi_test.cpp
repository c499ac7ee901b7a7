// The data-parallel optimizer (ZeRO 0–3) against references a user trusts:
// - its AdamW equals torch::optim::AdamW step for step;
// - at every stage, over the world as dp, parameters after several clipped
//   steps on random gradients (accumulated by autograd over micro-batches,
//   one parameter unused in one of them) equal torch's AdamW on the summed
//   gradients, identically on every rank; stages 2/3 also holding only the
//   gradient shard;
// - ZeRO's memory savings: stage 1 optimizer state, stage 2 gradients and
//   stage 3 parameters held per rank are 1/dp of stage 0's (within 10%);
// - the global gradient norm under tp, pp and dp layouts counts every
//   tensor-parallel shard, every replicated tensor once and the tied head
//   copy not at all;
// - the trainer's loss trajectory at stages 0–3 on dp2 (and dp4), with
//   ZeRO-1 on dp2+tp2 and stages 1–3 on dp2+pp2 equals the 1-rank run within
//   a relative 1e-4 (stage 3 gathers per layer, the trainer's default); through
//   the lossless mpc codec on the dp and zero groups it is bit-identical to the
//   identity codec and to plain MPI;
// - ZeRO-1 moves half of ZeRO-0's gradient bytes (reduce-scatter, not
//   allreduce), as CommStats counts them.
#include <gtest/gtest.h>
#include <mpi.h>
#include <torch/torch.h>

#include <cmath>
#include <string>
#include <vector>

#include "comm/policy_config.h"
#include "models/gpt.h"
#include "parallel/mesh/process_groups.h"
#include "parallel/zero/adamw.h"
#include "parallel/zero/data_parallel_optimizer.h"
#include "tests/support/mpi_world.h"
#include "tests/support/seeded_tensor.h"
#include "tests/support/test_seed.h"
#include "tests/support/tiny_gpt_run.h"

namespace cmpi::parallel {
namespace {

using testing::world_rank;
using testing::world_size;

using testing::seeded_normal;

void expect_close(const torch::Tensor& actual, const torch::Tensor& expected, double rel,
                  const std::string& what) {
  ASSERT_EQ(actual.sizes(), expected.sizes()) << what;
  const auto a = actual.contiguous();
  const auto e = expected.contiguous();
  const float* pa = a.data_ptr<float>();
  const float* pe = e.data_ptr<float>();
  int reported = 0;
  for (int64_t i = 0; i < a.numel() && reported < 5; ++i) {
    const double tolerance = rel * std::max(1.0, std::abs(double(pe[i])));
    if (std::abs(double(pa[i]) - double(pe[i])) > tolerance) {
      ADD_FAILURE() << what << " element " << i << ": " << pa[i] << " vs " << pe[i];
      ++reported;
    }
  }
}

// ------------------------------------------------------------ AdamW

TEST(AdamW, MatchesTorchAdamWOverSeveralSteps) {
  const uint64_t seed = cmpi::testing::test_seed();
  AdamWOptions o;
  o.beta1 = 0.9;
  o.beta2 = 0.95;
  o.eps = 1e-8;
  o.weight_decay = 0.1;
  const std::vector<std::vector<int64_t>> shapes = {{7, 5}, {13}};
  const std::vector<bool> decay = {true, false};

  std::vector<torch::Tensor> reference, mine, exp_avg, exp_avg_sq;
  for (size_t i = 0; i < shapes.size(); ++i) {
    reference.push_back(seeded_normal(shapes[i], seed + i).requires_grad_(true));
    mine.push_back(reference.back().detach().clone());
    exp_avg.push_back(torch::zeros(shapes[i]));
    exp_avg_sq.push_back(torch::zeros(shapes[i]));
  }
  auto defaults = torch::optim::AdamWOptions(o.lr)
                      .betas({o.beta1, o.beta2})
                      .eps(o.eps)
                      .weight_decay(o.weight_decay);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<torch::Tensor>{reference[0]},
                      std::make_unique<torch::optim::AdamWOptions>(defaults));
  auto no_decay = std::make_unique<torch::optim::AdamWOptions>(defaults);
  no_decay->weight_decay(0.0);
  groups.emplace_back(std::vector<torch::Tensor>{reference[1]}, std::move(no_decay));
  torch::optim::AdamW torch_adamw(groups, defaults);

  for (int64_t step = 1; step <= 8; ++step) {
    const double lr = 3e-3 * double(step) / 8.0;
    for (auto& group : torch_adamw.param_groups())
      static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
    std::vector<torch::Tensor> grads;
    for (size_t i = 0; i < shapes.size(); ++i) {
      // Gradients of very different scales per step exercise the moments.
      grads.push_back(seeded_normal(shapes[i], seed + 100 * uint64_t(step) + i) *
                      std::pow(10.0, double(step % 3) - 1.0));
      reference[i].mutable_grad() = grads[i].clone();
    }
    torch_adamw.step();
    const AdamWStep s(o, lr, step);
    for (size_t i = 0; i < shapes.size(); ++i)
      adamw_update(s, decay[i], mine[i].data_ptr<float>(), grads[i].data_ptr<float>(),
                   exp_avg[i].data_ptr<float>(), exp_avg_sq[i].data_ptr<float>(),
                   size_t(mine[i].numel()));
    for (size_t i = 0; i < shapes.size(); ++i)
      expect_close(mine[i], reference[i].detach(), 2e-6,
                   "parameter " + std::to_string(i) + " step " + std::to_string(step));
  }
}

TEST(AdamW, RejectsBadHyperParametersByName) {
  AdamWOptions o;
  o.beta2 = 1.0;
  try {
    validate(o);
    FAIL() << "beta2 = 1 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("beta2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(AdamWStep(AdamWOptions{}, -1.0, 1), std::invalid_argument);
}

// ------------------------------------------------------------ the optimizer over dp

struct TestParam {
  std::string name;
  std::vector<int64_t> shape;
  bool decay;
};

// Odd sizes so that buckets and shards cut through parameters and the flat
// buffer needs padding.
const std::vector<TestParam> kParams = {{"a.weight", {5, 7}, true},
                                        {"a.bias", {5}, false},
                                        {"b.weight", {9, 3}, true},
                                        {"norm", {11}, false},
                                        {"c.weight", {4, 6}, true}};

std::vector<ParamInfo> make_params(uint64_t seed) {
  std::vector<ParamInfo> params;
  for (size_t i = 0; i < kParams.size(); ++i)
    params.push_back({kParams[i].name,
                      seeded_normal(kParams[i].shape, seed + i).requires_grad_(true), false,
                      kParams[i].decay});
  return params;
}

// The gradient contribution of (step, dp rank, micro-batch) to parameter i.
torch::Tensor contribution(uint64_t seed, int64_t step, int rank, int micro, size_t i) {
  return seeded_normal(kParams[i].shape, seed ^ (uint64_t(step) << 40) ^ (uint64_t(rank) << 24) ^
                                             (uint64_t(micro) << 16) ^
                                             (i + 1) * 0x9E3779B97F4A7C15ull);
}

constexpr int kMicroBatches = 2;
// b.weight gets no gradient in the first micro-batch (an unused parameter):
// shard-only gradients must close that backward's round without it.
bool used_in(int micro, size_t i) {
  return micro > 0 || kParams[i].name != "b.weight";
}
constexpr int64_t kSteps = 6;
// No clipping for the first steps, then a bound below the norm.
double clip_at(int64_t step) {
  return step < 3 ? 0.0 : 2.0;
}

DataParallelOptimizerOptions test_options(int stage, int64_t bucket_bytes) {
  DataParallelOptimizerOptions o;
  o.adamw.beta1 = 0.9;
  o.adamw.beta2 = 0.95;
  o.adamw.weight_decay = 0.1;
  o.zero_stage = stage;
  o.bucket_bytes = bucket_bytes;
  return o;
}

// One training step as the trainer runs it, with autograd accumulating each
// micro-batch's gradient (d/dp Σ p·g = g) into the optimizer's buffer.
double run_step(DataParallelOptimizer& optimizer, std::vector<ParamInfo>& params, uint64_t seed,
                int64_t step, int dp_rank, double lr) {
  optimizer.zero_grad();
  optimizer.before_forward();
  for (int m = 0; m < kMicroBatches; ++m) {
    torch::Tensor loss = torch::zeros({});
    for (size_t i = 0; i < params.size(); ++i)
      if (used_in(m, i))
        loss = loss + (params[i].tensor * contribution(seed, step, dp_rank, m, i)).sum();
    loss.backward();
  }
  return optimizer.step(lr, clip_at(step));
}

TEST(ZeroOptimizer, EveryStageMatchesTorchAdamWOnTheSummedGradients) {
  const uint64_t seed = cmpi::testing::test_seed();
  const int dp = world_size();
  ParallelDims dims;
  dims.dp = dp;
  ProcessGroups groups(MPI_COMM_WORLD, dims);

  for (int64_t bucket_bytes : {int64_t(16) * dp, int64_t(64) * dp, int64_t(1) << 20}) {
    // Stages 0-3, then 2 and 3 holding only the gradient shard.
    for (int variant = 0; variant < 6; ++variant) {
      const int stage = variant < 4 ? variant : variant - 2;
      const bool shard = variant >= 4;
      const std::string what = "stage " + std::to_string(stage) + (shard ? " shard" : "") +
                               " bucket " + std::to_string(bucket_bytes);
      auto options = test_options(stage, bucket_bytes);
      options.shard_gradient_memory = shard;
      auto params = make_params(seed);
      auto optimizer = make_data_parallel_optimizer(params, options, groups);

      auto reference = make_params(seed);
      std::vector<torch::Tensor> decay, no_decay;
      for (const auto& p : reference) (p.weight_decay ? decay : no_decay).push_back(p.tensor);
      auto defaults = torch::optim::AdamWOptions(1.0).betas({0.9, 0.95}).weight_decay(0.1);
      std::vector<torch::optim::OptimizerParamGroup> param_groups;
      param_groups.emplace_back(decay, std::make_unique<torch::optim::AdamWOptions>(defaults));
      auto zero_decay = std::make_unique<torch::optim::AdamWOptions>(defaults);
      zero_decay->weight_decay(0.0);
      param_groups.emplace_back(no_decay, std::move(zero_decay));
      torch::optim::AdamW torch_adamw(param_groups, defaults);

      for (int64_t step = 0; step < kSteps; ++step) {
        const double lr = 1e-2 * double(step + 1);
        const double norm = run_step(*optimizer, params, seed, step, groups.coord().dp, lr);

        std::vector<torch::Tensor> tensors;
        for (size_t i = 0; i < reference.size(); ++i) {
          auto sum = torch::zeros(kParams[i].shape);
          for (int r = 0; r < dp; ++r)
            for (int m = 0; m < kMicroBatches; ++m)
              if (used_in(m, i)) sum += contribution(seed, step, r, m, i);
          reference[i].tensor.mutable_grad() = sum;
          tensors.push_back(reference[i].tensor);
        }
        const double expected_norm =
            torch::nn::utils::clip_grad_norm_(tensors, clip_at(step) > 0 ? clip_at(step) : 1e30);
        EXPECT_NEAR(norm, expected_norm, 1e-5 * expected_norm) << what << " step " << step;
        for (auto& group : torch_adamw.param_groups())
          static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
        torch_adamw.step();
      }
      optimizer->before_forward();  // stage 3: materialise the parameters
      std::vector<float> mine;
      for (size_t i = 0; i < params.size(); ++i) {
        expect_close(params[i].tensor.detach(), reference[i].tensor.detach(), 1e-5,
                     what + " " + params[i].name);
        auto flat = params[i].tensor.detach().reshape({-1});
        mine.insert(mine.end(), flat.data_ptr<float>(), flat.data_ptr<float>() + flat.numel());
      }
      // Replicas must stay bit-identical.
      std::vector<float> root = mine;
      MPI_Bcast(root.data(), int(root.size()), MPI_FLOAT, 0, MPI_COMM_WORLD);
      EXPECT_EQ(mine, root) << what << ": parameters differ from dp rank 0's";
    }
  }
}

TEST(ZeroOptimizer, ShardsStateGradientsAndParametersOverDp) {
  const uint64_t seed = cmpi::testing::test_seed();
  const int dp = world_size();
  if (dp < 2) GTEST_SKIP() << "needs dp >= 2";
  ParallelDims dims;
  dims.dp = dp;
  ProcessGroups groups(MPI_COMM_WORLD, dims);

  std::vector<MemoryUsage> after_step;
  for (int stage = 0; stage <= 3; ++stage) {
    auto params = make_params(seed);
    auto optimizer = make_data_parallel_optimizer(params, test_options(stage, 64 * dp), groups);
    run_step(*optimizer, params, seed, 0, groups.coord().dp, 1e-2);
    after_step.push_back(optimizer->memory());
    if (stage == 3) {
      for (const auto& p : params)
        EXPECT_EQ(p.tensor.numel(), 0) << p.name << " still materialised between steps";
      optimizer->before_forward();
      const auto gathered = optimizer->memory();
      EXPECT_EQ(gathered.parameter_bytes,
                after_step[0].parameter_bytes + after_step[3].parameter_bytes)
          << "gathered: full flat parameters plus the shard";
      for (size_t i = 0; i < params.size(); ++i)
        EXPECT_EQ(params[i].tensor.sizes().vec(), kParams[i].shape) << params[i].name;
    }
  }
  const auto ratio = [&](int64_t sharded, int64_t whole) {
    return double(sharded) * dp / double(whole);
  };
  const auto& zero0 = after_step[0];
  EXPECT_NEAR(ratio(after_step[1].optimizer_bytes, zero0.optimizer_bytes), 1.0, 0.1);
  EXPECT_EQ(after_step[1].gradient_bytes, zero0.gradient_bytes);
  EXPECT_EQ(after_step[1].parameter_bytes, zero0.parameter_bytes);
  EXPECT_NEAR(ratio(after_step[2].optimizer_bytes, zero0.optimizer_bytes), 1.0, 0.1);
  EXPECT_NEAR(ratio(after_step[2].gradient_bytes, zero0.gradient_bytes), 1.0, 0.1);
  EXPECT_NEAR(ratio(after_step[3].optimizer_bytes, zero0.optimizer_bytes), 1.0, 0.1);
  EXPECT_NEAR(ratio(after_step[3].gradient_bytes, zero0.gradient_bytes), 1.0, 0.1);
  EXPECT_NEAR(ratio(after_step[3].parameter_bytes, zero0.parameter_bytes), 1.0, 0.1);
}

// The claim a user reads off the metrics, on the real model: under ZeRO-3 a
// rank holds 1/dp of the GPT's parameters between steps (and 1/dp of its
// gradients and AdamW state), against ZeRO-0's full copies.
TEST(ZeroOptimizer, GptUnderZero3HoldsOneOverDpOfZero0) {
  const int dp = world_size();
  if (dp < 2) GTEST_SKIP() << "needs dp >= 2";
  ParallelDims dims;
  dims.dp = dp;
  ProcessGroups groups(MPI_COMM_WORLD, dims);
  models::GptOptions gpt;
  gpt.vocab_size = 64;
  gpt.seq_len = 16;
  gpt.layers = 2;
  gpt.hidden = 32;
  gpt.heads = 4;
  gpt.seed = cmpi::testing::test_seed();
  auto generator = at::make_generator<at::CPUGeneratorImpl>(gpt.seed + 1);
  const auto tokens = torch::randint(gpt.vocab_size, {2, gpt.seq_len + 1}, generator, torch::kLong);

  std::vector<MemoryUsage> usage;
  for (int stage : {0, 3}) {
    models::Gpt model(gpt, groups);
    auto optimizer =
        make_data_parallel_optimizer(model->param_infos(), test_options(stage, 16 << 10), groups);
    optimizer->zero_grad();
    optimizer->before_forward();
    model->loss(tokens.narrow(1, 0, gpt.seq_len), tokens.narrow(1, 1, gpt.seq_len)).backward();
    optimizer->step(1e-3, 1.0);
    usage.push_back(optimizer->memory());
  }
  const double whole = double(gpt.parameter_count()) * sizeof(float);
  EXPECT_NEAR(double(usage[0].parameter_bytes) / whole, 1.0, 0.01) << "ZeRO-0 holds the model";
  const double ratio = double(usage[1].parameter_bytes) * dp / double(usage[0].parameter_bytes);
  EXPECT_NEAR(ratio, 1.0, 0.1) << "ZeRO-3 parameters " << usage[1].parameter_bytes
                               << " bytes vs ZeRO-0 " << usage[0].parameter_bytes;
  EXPECT_NEAR(double(usage[1].gradient_bytes) * dp / double(usage[0].gradient_bytes), 1.0, 0.1);
  EXPECT_NEAR(double(usage[1].optimizer_bytes) * dp / double(usage[0].optimizer_bytes), 1.0, 0.1);
}

TEST(ZeroOptimizer, RejectsBadInputNamingTheCulprit) {
  ParallelDims dims;
  dims.dp = world_size();
  ProcessGroups groups(MPI_COMM_WORLD, dims);
  const auto message = [&](std::vector<ParamInfo> params, DataParallelOptimizerOptions o) {
    try {
      make_data_parallel_optimizer(std::move(params), o, groups);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const uint64_t seed = cmpi::testing::test_seed();
  EXPECT_NE(message(make_params(seed), test_options(4, 1 << 20)).find("zero_stage"),
            std::string::npos);
  auto twice = make_params(seed);
  twice.push_back(twice[1]);
  twice.back().name = "alias";
  EXPECT_NE(message(twice, test_options(1, 1 << 20)).find("alias"), std::string::npos);
  auto doubles = make_params(seed);
  doubles[2].tensor = doubles[2].tensor.detach().to(torch::kDouble);
  EXPECT_NE(message(doubles, test_options(0, 1 << 20)).find("b.weight"), std::string::npos);
  // A tied table with no tied_gradient to share it.
  auto unshared = make_params(seed);
  unshared[1].name = "no.such.param";
  unshared[1].tied_across_stages = true;
  EXPECT_NE(message(unshared, test_options(0, 1 << 20)).find("no.such.param"), std::string::npos);
  EXPECT_NE(message(make_params(seed), test_options(2, 2)).find("bucket"), std::string::npos);
}

// ------------------------------------------------------------ the global norm under tp/pp/dp

// Gradients of a rank: "split" is tensor-parallel (differs per tp rank),
// "shared" replicated over tp, "tied" present on every pipeline stage but
// counted only by the first.
torch::Tensor norm_grad(uint64_t seed, int which, const GridCoord& c, bool tensor_parallel) {
  const uint64_t key = uint64_t(which) * 1000003 + uint64_t(c.pp) * 7919 + uint64_t(c.dp) * 104729 +
                       (tensor_parallel ? uint64_t(c.tp) * 15485863 : 0);
  return seeded_normal({which == 0 ? 10 : 7}, seed + key);
}

TEST(ZeroOptimizer, GlobalNormCountsShardsOnceAndSkipsTheTiedCopy) {
  const uint64_t seed = cmpi::testing::test_seed();
  const int world = world_size();
  std::vector<ParallelDims> layouts;
  const auto layout = [](int dp, int tp, int pp) {
    ParallelDims d;
    d.dp = dp;
    d.tp = tp;
    d.pp = pp;
    return d;
  };
  if (world == 2) layouts = {layout(1, 2, 1), layout(1, 1, 2), layout(2, 1, 1)};
  if (world == 4) layouts = {layout(2, 2, 1), layout(2, 1, 2), layout(1, 2, 2)};
  if (layouts.empty()) GTEST_SKIP() << "layouts for 2 or 4 ranks";

  for (const auto& dims : layouts) {
    for (int stage : {0, 2, 3}) {
      ProcessGroups groups(MPI_COMM_WORLD, dims);
      const auto& me = groups.coord();
      std::vector<ParamInfo> params = {
          {"split", torch::zeros({10}).requires_grad_(true), true, true},
          {"shared", torch::zeros({7}).requires_grad_(true), false, false},
          {"tied", torch::zeros({7}).requires_grad_(true), false, true}};
      auto options = test_options(stage, 32);
      params[2].counted_on_other_stage = me.pp > 0;
      auto optimizer = make_data_parallel_optimizer(params, options, groups);
      optimizer->zero_grad();
      optimizer->before_forward();
      // Gradients set directly (not by autograd): the optimizer folds them in.
      for (int i = 0; i < 3; ++i)
        params[size_t(i)].tensor.mutable_grad() = norm_grad(seed, i == 0 ? 0 : i, me, i == 0);
      const double norm = optimizer->step(0.0, 0.0);

      double expected = 0;
      for (int pp = 0; pp < dims.pp; ++pp) {
        for (int tp = 0; tp < dims.tp; ++tp) {
          for (int i = 0; i < 3; ++i) {
            if (i > 0 && tp > 0) continue;   // replicated: once per stage
            if (i == 2 && pp > 0) continue;  // the tied copy: first stage only
            torch::Tensor sum;
            for (int dp = 0; dp < dims.dp; ++dp) {
              GridCoord c;
              c.pp = pp;
              c.tp = tp;
              c.dp = dp;
              auto g = norm_grad(seed, i, c, i == 0);
              sum = sum.defined() ? sum + g : g;
            }
            expected += sum.to(torch::kDouble).pow(2).sum().item<double>();
          }
        }
      }
      EXPECT_NEAR(norm, std::sqrt(expected), 1e-5 * std::sqrt(expected))
          << dims.to_string() << " stage " << stage;
    }
  }
}

// ------------------------------------------------------------ the trainer

config::Config small_config(uint64_t seed) {
  config::Config c = cmpi::testing::tiny_gpt_config(seed);
  c.training.grad_clip = 0.5;            // below the early norms: clipping is exercised
  c.parallel.dp_bucket_bytes = 4 << 10;  // several buckets
  return c;
}

using cmpi::testing::TinyGptRun;

// Trains on `comm` (every rank of it calls this) with the given layout.
TinyGptRun train_with(MPI_Comm comm, config::Config config, ParallelDims dims, int zero_stage,
                      const comm::PolicyConfig& policy = {}) {
  config.parallel.zero_stage = zero_stage;
  dims.zero_stage = zero_stage;
  return cmpi::testing::train_tiny_gpt(comm, config, dims, policy);
}

std::vector<double> train_on(MPI_Comm comm, const config::Config& config, ParallelDims dims,
                             int zero_stage) {
  return train_with(comm, config, dims, zero_stage).losses;
}

void expect_same_trajectory(const std::vector<double>& reference, const std::vector<double>& losses,
                            const std::string& what) {
  cmpi::testing::expect_same_trajectory(reference, losses, 1e-4, what);
}

ParallelDims dims_of(int dp, int tp, int pp) {
  ParallelDims d;
  d.dp = dp;
  d.tp = tp;
  d.pp = pp;
  return d;
}

TEST(ZeroTrainer, EveryStageMatchesTheSingleRankTrajectory) {
  const int world = world_size(), rank = world_rank();
  const auto config = small_config(cmpi::testing::test_seed() % 100000);
  const std::vector<double> reference = cmpi::testing::single_rank_losses(config);
  EXPECT_LT(reference.back(), reference.front()) << "the 1-rank run should learn";

  MPI_Comm pair;
  MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &pair);
  for (int stage = 0; stage <= 3; ++stage)
    expect_same_trajectory(reference, train_on(pair, config, dims_of(2, 1, 1), stage),
                           "dp2 zero" + std::to_string(stage));
  MPI_Comm_free(&pair);
  if (world < 4) return;
  MPI_Comm quad;
  MPI_Comm_split(MPI_COMM_WORLD, rank / 4, rank, &quad);
  for (int stage = 0; stage <= 3; ++stage)
    expect_same_trajectory(reference, train_on(quad, config, dims_of(4, 1, 1), stage),
                           "dp4 zero" + std::to_string(stage));
  expect_same_trajectory(reference, train_on(quad, config, dims_of(2, 2, 1), 1), "dp2+tp2 zero1");
  for (int stage = 1; stage <= 3; ++stage)
    expect_same_trajectory(reference, train_on(quad, config, dims_of(2, 1, 2), stage),
                           "dp2+pp2 zero" + std::to_string(stage));
  MPI_Comm_free(&quad);
}

// ZeRO-1 sums gradients with a reduce-scatter per bucket, not an allreduce:
// CommStats shows half of ZeRO-0's gradient bytes over dp (the same run
// otherwise; the loss and norm scalars are noise), the weights' allgather as
// many bytes as the reduce-scatter, and the losses as before.
TEST(ZeroTrainer, ZeroOneSendsHalfTheGradientBytesOfZeroZero) {
  const int world = world_size(), rank = world_rank();
  const auto config = small_config(cmpi::testing::test_seed() % 100000 + 3);
  for (int dp : {2, 4}) {
    if (dp > world) continue;
    MPI_Comm group;
    MPI_Comm_split(MPI_COMM_WORLD, rank / dp, rank, &group);
    const std::string what = "dp" + std::to_string(dp);
    const auto zero0 = train_with(group, config, dims_of(dp, 1, 1), 0);
    const auto zero1 = train_with(group, config, dims_of(dp, 1, 1), 1);
    MPI_Comm_free(&group);
    const double allreduced = double(zero0.dp_allreduce.wire_bytes);
    const double scattered = double(zero1.zero_reduce_scatter.wire_bytes);
    ASSERT_GT(allreduced, 0) << what;
    EXPECT_NEAR(scattered / allreduced, 0.5, 0.01)
        << what << ": ZeRO-0 allreduced " << allreduced << " gradient bytes, ZeRO-1 "
        << "reduce-scattered " << scattered;
    EXPECT_LT(double(zero1.dp_allreduce.wire_bytes), 0.01 * allreduced)
        << what << ": ZeRO-1 still allreduces gradients over dp";
    EXPECT_EQ(zero1.zero_allgather.wire_bytes, zero1.zero_reduce_scatter.wire_bytes) << what;
    expect_same_trajectory(zero0.losses, zero1.losses, what + " zero1 vs zero0");
  }
}

// mpc is lossless: ZeRO's reduce-scatter, allgather and norm through mpc give
// the bits of the identity codec on the same compressed algorithms, and, with
// every reduction over two ranks (a + b either way round), of plain MPI.
TEST(ZeroTrainer, LosslessMpcOnTheZeroGroupIsBitIdentical) {
  const int rank = world_rank();
  auto config = small_config(cmpi::testing::test_seed() % 100000 + 7);
  config.training.steps = 4;
  MPI_Comm pair;
  MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &pair);
  for (int stage : {1, 3}) {
    const std::string what = "dp2 zero" + std::to_string(stage);
    const auto plain = train_with(pair, config, dims_of(2, 1, 1), stage);
    const auto identity =
        train_with(pair, config, dims_of(2, 1, 1), stage,
                   cmpi::testing::every_message_of({comm::GroupKind::kDp, comm::GroupKind::kZero},
                                                   "identity"));
    const auto mpc = train_with(
        pair, config, dims_of(2, 1, 1), stage,
        cmpi::testing::every_message_of({comm::GroupKind::kDp, comm::GroupKind::kZero}, "mpc"));
    EXPECT_EQ(plain.zero_traffic.compressed_calls, 0u) << what;
    EXPECT_GT(mpc.zero_traffic.compressed_calls, 0u) << what << ": nothing went through mpc";
    EXPECT_LT(mpc.zero_traffic.wire_bytes, mpc.zero_traffic.raw_bytes) << what;
    ASSERT_EQ(identity.losses.size(), mpc.losses.size());
    for (size_t i = 0; i < mpc.losses.size(); ++i) {
      EXPECT_EQ(mpc.losses[i], identity.losses[i]) << what << " step " << i + 1;
      EXPECT_EQ(mpc.losses[i], plain.losses[i]) << what << " step " << i + 1;
    }
  }
  MPI_Comm_free(&pair);
}

}  // namespace
}  // namespace cmpi::parallel
