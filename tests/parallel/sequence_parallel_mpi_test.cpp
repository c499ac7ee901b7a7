// Sequence parallelism (parallel.sequence_parallel, Megatron-SP) must compute
// what the single-rank model computes. First the region ops against plain
// tensors (the whole world is the tp group): the linear over the gathered
// sequence and the reduce-scatter along it, with their gradients, and the
// tp sum of a parameter's gradient, the same bits on every rank. Then the
// GPT (GPT-2 style and GPT-NeoX style: rotary, parallel residual, untied
// head), with and without recomputation: every tp rank's loss and gradients
// equal the single-rank model's (its shard of them), and the tp group's
// traffic is all-gathers and reduce-scatters where it was allreduces. Last
// the Trainer's loss trajectory over 10 steps under tp2, tp4, dp2 x tp2
// (ZeRO-1, per-layer ZeRO-3), tp2 x pp2 and, on 8 ranks, dp2 x tp2 x pp2
// (ZeRO-1, ZeRO-3) matches the single-rank run, in bf16 too; lossless mpc on tp gives
// the identity codec's bits. Random data from the printed seed
// (tests/support/test_seed.h).
#include <gtest/gtest.h>
#include <mpi.h>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "models/gpt.h"
#include "parallel/mesh/process_groups.h"
#include "parallel/tensor/sequence_parallel_ops.h"
#include "tests/parallel/tensor_parallel_test_support.h"
#include "tests/support/mpi_world.h"
#include "tests/support/test_seed.h"
#include "tests/support/tiny_gpt_run.h"

namespace cmpi::parallel {
namespace {

using testing::world_rank;
using testing::world_size;
using tp_testing::by_name;
using tp_testing::kTolerance;
using tp_testing::random_ids;
using tp_testing::random_normal;
using tp_testing::seed;
using tp_testing::slice_of;
using tp_testing::tp_dims;
using tp_testing::WorldTp;

// ---------------------------------------------------------------- ops

// A column-parallel linear reading a sequence region: each rank holds its
// positions of x and its own rows of W (its output features). Forward is the
// plain linear over the whole sequence; x's gradient is this rank's positions
// of the sum over ranks of dy_r · W_r; W's is dy_rᵀ · x over the whole x.
TEST_F(WorldTp, GatheredLinearIsTheLinearOverTheWholeSequence) {
  const int64_t time = 3 * parts, in = 6, out = 4;
  const auto full = random_normal({2, time, in}, 1);
  const auto weight_of = [](int r) { return random_normal({out, in}, 200 + uint64_t(r)); };
  const auto grad_of = [&](int r) { return random_normal({2, time, out}, 300 + uint64_t(r)); };
  auto x = slice_of(full, 1, rank, parts).clone().requires_grad_(true);
  auto weight = weight_of(rank).requires_grad_(true);
  auto bias = random_normal({out}, 400 + uint64_t(rank)).requires_grad_(true);
  auto y = sequence_gathered_linear(x, weight, bias, tp);
  EXPECT_TENSOR_NEAR(y, torch::nn::functional::linear(full, weight, bias), "forward");
  y.backward(grad_of(rank));
  auto dx = torch::zeros_like(full);
  for (int r = 0; r < parts; ++r) dx += torch::matmul(grad_of(r), weight_of(r));
  EXPECT_TENSOR_NEAR(x.grad(), slice_of(dx, 1, rank, parts), "input gradient");
  EXPECT_TENSOR_NEAR(weight.grad(), grad_of(rank).reshape({-1, out}).t().mm(full.reshape({-1, in})),
                     "weight gradient");
  EXPECT_TENSOR_NEAR(bias.grad(), grad_of(rank).sum(std::vector<int64_t>{0, 1}), "bias gradient");
}

TEST_F(WorldTp, ReduceScatterSumsOwnPositionsAndGathersTheGradient) {
  auto x = random_normal({3, 2 * parts, 4}, 10 + uint64_t(rank)).requires_grad_(true);
  auto y = reduce_scatter_to_sequence_region(x, tp);
  auto sum = torch::zeros({3, 2 * parts, 4});
  for (int r = 0; r < parts; ++r) sum += random_normal({3, 2 * parts, 4}, 10 + uint64_t(r));
  EXPECT_TENSOR_NEAR(y, slice_of(sum, 1, rank, parts), "reduce-scatter forward");
  const auto grad = random_normal({3, 2 * parts, 4}, 11);
  y.backward(slice_of(grad, 1, rank, parts));
  EXPECT_TRUE(torch::equal(x.grad(), grad)) << "backward gathers every rank's slice";
}

TEST_F(WorldTp, OpsRefuseSequencesThatDoNotSplitAndNonFloatTensors) {
  if (parts == 1) GTEST_SKIP() << "every length splits over one rank";
  EXPECT_THROW(reduce_scatter_to_sequence_region(torch::zeros({1, parts + 1, 2}), tp),
               std::invalid_argument);
  EXPECT_THROW(sequence_gathered_linear(torch::zeros({1, parts, 2}, torch::kDouble),
                                        torch::zeros({3, 2}), {}, tp),
               std::invalid_argument);
  EXPECT_THROW(sequence_shard(parts * 3 + 1, tp), std::invalid_argument);
  EXPECT_EQ(sequence_shard(parts * 3, tp).first, rank * 3);
}

// The summed gradient is the same bits on every rank, as the replicated
// parameter buckets (exact over dp) need.
TEST_F(WorldTp, ParameterGradientIsSummedOverTpWithTheSameBitsEverywhere) {
  auto parameter = random_normal({7}, 20).requires_grad_(true);
  auto used = sum_gradient_over_tp(parameter, tp);
  EXPECT_TRUE(torch::equal(used, parameter));
  const auto mine = random_normal({7}, 30 + uint64_t(rank)) * 1e3;
  (used * mine).sum().backward();
  auto sum = torch::zeros({7});
  for (int r = 0; r < parts; ++r) sum += random_normal({7}, 30 + uint64_t(r)) * 1e3;
  EXPECT_TENSOR_NEAR(parameter.grad(), sum, "summed gradient");
  auto first = parameter.grad().clone();
  MPI_Bcast(first.data_ptr<float>(), 7, MPI_FLOAT, 0, MPI_COMM_WORLD);
  EXPECT_TRUE(torch::equal(first, parameter.grad())) << "rank " << rank << " differs from rank 0";
}

// ---------------------------------------------------------------- the GPT

models::GptOptions gpt2_style() {
  return tp_testing::tiny_gpt_options();
}

models::GptOptions neox_style() {
  return tp_testing::tiny_neox_options();
}

// The whole world's tp shards of the model with sequence parallelism against
// the single-rank model without it: loss, and every parameter's gradient
// (the tp shard of it).
void expect_matches_single_rank(models::GptOptions options, const std::string& what) {
  SCOPED_TRACE(what + " (seed " + std::to_string(seed()) + ")");
  const auto tokens = random_ids({2, options.seq_len}, options.vocab_size, 70);
  const auto targets = random_ids({2, options.seq_len}, options.vocab_size, 71);
  ProcessGroups single_groups(MPI_COMM_SELF, ParallelDims{});
  models::Gpt single(options, single_groups);
  auto single_loss = single->loss(tokens, targets);
  single_loss.backward();
  const auto single_params = by_name(single->param_infos());

  options.sequence_parallel = true;
  ProcessGroups groups(MPI_COMM_WORLD, tp_dims(world_size()));
  const int rank = groups.tp().rank(), parts = groups.tp().size();
  models::Gpt model(options, groups);
  tp_testing::expect_shards_match_single_rank(model, tokens, targets, single_loss, single_params,
                                              rank, parts);
}

TEST(SequenceParallelGpt, LossAndGradientsMatchTheSingleRankModel) {
  expect_matches_single_rank(gpt2_style(), "gpt2 style");
  expect_matches_single_rank(neox_style(), "neox style");
}

TEST(SequenceParallelGpt, RecomputedBlocksMatchTheSingleRankModel) {
  for (auto what : {models::Recompute::kSelective, models::Recompute::kFull}) {
    auto options = neox_style();
    options.recompute = what;
    auto plain = gpt2_style();
    plain.recompute = what;
    const std::string name = what == models::Recompute::kFull ? "full" : "selective";
    expect_matches_single_rank(options, "neox, recompute " + name);
    expect_matches_single_rank(plain, "gpt2, recompute " + name);
  }
}

// Pipeline pieces: a stage's output is its tp rank's part of the sequence,
// and chaining the pieces by hand gives the whole model's loss.
TEST(SequenceParallelGpt, StagesPassTheirPartOfTheSequence) {
  auto options = gpt2_style();
  options.layers = 3;
  options.sequence_parallel = true;
  const auto tokens = random_ids({2, 16}, options.vocab_size, 80);
  const auto targets = random_ids({2, 16}, options.vocab_size, 81);
  ProcessGroups groups(MPI_COMM_WORLD, tp_dims(world_size()));
  models::Gpt whole(options, groups);
  models::Gpt first(options, groups, models::StagePlan{0, 1, true, false});
  models::Gpt last(options, groups, models::StagePlan{1, 3, false, true});
  const auto boundary = first->run_blocks(first->embed(tokens));
  EXPECT_EQ(boundary.sizes(), (std::vector<int64_t>{2, 16 / world_size(), 32}));
  EXPECT_NEAR(last->head_loss(last->run_blocks(boundary), targets).item<double>(),
              whole->loss(tokens, targets).item<double>(), kTolerance);
}

// With dropout the sequence regions' masks differ per tp rank (each holds
// other positions), yet the replicated parameters' gradients are the same
// bits on every rank (summed exactly over tp), and the run repeats.
TEST(SequenceParallelGpt, DropoutKeepsReplicatedGradientsIdenticalAndRepeats) {
  auto options = neox_style();
  options.dropout = 0.2;
  options.sequence_parallel = true;
  const auto tokens = random_ids({2, 16}, options.vocab_size, 90);
  const auto targets = random_ids({2, 16}, options.vocab_size, 91);
  ProcessGroups groups(MPI_COMM_WORLD, tp_dims(world_size()));
  const auto run = [&] {
    torch::manual_seed(seed());
    models::Gpt model(options, groups);
    model->train();
    auto loss = model->loss(tokens, targets);
    loss.backward();
    return tp_testing::loss_and_replicated_gradient_sums(loss, model->param_infos());
  };
  const auto mine = run();
  EXPECT_EQ(run(), mine) << "the same seed draws the same masks";
  tp_testing::expect_same_on_every_rank(mine);
}

// One forward and backward: without sequence parallelism the tp group
// allreduces the activations; with it the same activations travel as
// all-gathers and reduce-scatters (per block 2 of each forward and 2
// backward; the embedding's reduce-scatter, the head's all-gather and their
// conjugates), plus the second all-gather of each gathered linear's input in
// backward (2 per block and the head's); the allreduces left are the
// cross-entropy's few numbers per token and the exact sums of the sequence
// regions' parameter gradients (per block its 2 LayerNorms' weight and bias
// and the 2 row-parallel biases; the final LayerNorm's 2; the position
// table).
TEST(SequenceParallelGpt, TpTrafficIsAllgatherAndReduceScatterInsteadOfAllreduce) {
  if (world_size() == 1) GTEST_SKIP() << "one tp rank sends nothing";
  const auto options = gpt2_style();
  const int64_t layers = options.layers;
  const auto tokens = random_ids({2, 16}, options.vocab_size, 95);
  const auto targets = random_ids({2, 16}, options.vocab_size, 96);
  const auto traffic = [&](bool sequence_parallel) {
    auto o = options;
    o.sequence_parallel = sequence_parallel;
    ProcessGroups groups(MPI_COMM_WORLD, tp_dims(world_size()));
    models::Gpt model(o, groups);
    model->loss(tokens, targets).backward();
    return groups.tp().stats();
  };
  const auto plain = traffic(false), split = traffic(true);
  // Both runs gather the cross-entropy's per-token statistics once.
  EXPECT_EQ(plain.at(comm::Op::kReduceScatter).calls, 0u);
  EXPECT_EQ(split.at(comm::Op::kAllgather).calls - plain.at(comm::Op::kAllgather).calls,
            uint64_t(6 * layers + 3));
  EXPECT_EQ(split.at(comm::Op::kReduceScatter).calls, uint64_t(4 * layers + 2));
  EXPECT_EQ(
      split.at(comm::Op::kAllreduce).calls,
      plain.at(comm::Op::kAllreduce).calls - uint64_t(4 * layers + 2) + uint64_t(6 * layers + 3));
  // Every activation moved as much as before (a ring reduce-scatter plus
  // all-gather is a ring allreduce), the second all-gathers (N-1)/N of an
  // activation each, and the exact sums 2 (N-1)/N of their floats (whole
  // numbers of floats here).
  const int64_t n = world_size();
  const int64_t activation = 2 * options.seq_len * options.hidden;
  const int64_t summed = (6 * layers + 2) * options.hidden + options.seq_len * options.hidden;
  const uint64_t added_bytes =
      uint64_t((2 * layers + 1) * (n - 1) * activation / n * 4 + 2 * (n - 1) * summed / n * 4);
  EXPECT_EQ(split.at(comm::Op::kAllgather).raw_bytes +
                split.at(comm::Op::kReduceScatter).raw_bytes +
                split.at(comm::Op::kAllreduce).raw_bytes,
            plain.at(comm::Op::kAllgather).raw_bytes + plain.at(comm::Op::kAllreduce).raw_bytes +
                added_bytes);
}

// ---------------------------------------------------------------- training

constexpr double kTrajectoryTolerance = 1e-5;  // relative: the order of float sums
constexpr double kZero3Tolerance = 1e-4;       // as zero3_layer_mpi_test

config::Config sequence_parallel(config::Config c) {
  c.parallel.sequence_parallel = true;
  return c;
}

config::Config gpt2_config() {
  auto c = cmpi::testing::tiny_gpt_config(seed());
  c.training.grad_clip = 0.5;  // active: the norm over tp counts replicated parameters once
  c.parallel.dp_bucket_bytes = 4 << 10;
  return c;
}

config::Config with_recompute(config::Config c, const std::string& what) {
  c.training.recompute = what;
  return c;
}

struct Layout {
  int ranks;
  parallel::ParallelDims dims;
  config::Config config;
  double tolerance;
  std::string what;
};

void expect_layouts_match(const config::Config& config, const std::vector<Layout>& layouts) {
  const auto reference = cmpi::testing::single_rank_losses(config);
  ASSERT_LT(reference.back(), reference.front())
      << "the 1-rank run should learn (seed " << seed() << ")";
  for (const auto& layout : layouts) {
    if (world_size() % layout.ranks != 0) continue;
    cmpi::testing::expect_same_trajectory(
        reference,
        cmpi::testing::train_in_groups_of(layout.ranks, sequence_parallel(layout.config),
                                          layout.dims)
            .losses,
        layout.tolerance, layout.what + " (seed " + std::to_string(seed()) + ")");
  }
}

TEST(SequenceParallelTraining, Gpt2StyleLayoutsMatchTheSingleRankRun) {
  using cmpi::testing::dims_of;
  using cmpi::testing::with_zero;
  const auto c = gpt2_config();
  if (world_size() == 8) {
    expect_layouts_match(c, {{8, dims_of(2, 2, 2, 1), with_zero(c, 1), kTrajectoryTolerance,
                              "dp2 x tp2 x pp2 zero1"}});
    return;
  }
  expect_layouts_match(
      c, {{2, dims_of(1, 2), c, kTrajectoryTolerance, "tp2"},
          {4, dims_of(1, 4), c, kTrajectoryTolerance, "tp4"},
          {4, dims_of(2, 2, 1, 1), with_zero(c, 1), kTrajectoryTolerance, "dp2 x tp2 zero1"},
          {4, dims_of(1, 2, 2), with_recompute(c, "selective"), kTrajectoryTolerance,
           "tp2 x pp2 recompute selective"}});
}

TEST(SequenceParallelTraining, NeoxStyleLayoutsMatchTheSingleRankRun) {
  using cmpi::testing::dims_of;
  using cmpi::testing::with_zero;
  const auto c = cmpi::testing::tiny_neox_config(seed());
  if (world_size() == 8) {
    expect_layouts_match(c, {{8, dims_of(2, 2, 2, 3), with_zero(c, 3), kZero3Tolerance,
                              "dp2 x tp2 x pp2 zero3 per layer"}});
    return;
  }
  expect_layouts_match(
      c, {{2, dims_of(1, 2), with_recompute(c, "full"), kTrajectoryTolerance, "tp2 recompute full"},
          {4, dims_of(2, 2, 1, 3), with_zero(c, 3), kZero3Tolerance, "dp2 x tp2 zero3 per layer"},
          {4, dims_of(1, 2, 2), c, kTrajectoryTolerance, "tp2 x pp2"}});
}

// bf16 compute: the 16-bit activations travel widened to float32 and each
// reduce-scatter rounds its float32 sum once, as the tp allreduce does;
// tolerance as mixed_precision_mpi_test's for layouts with tp.
TEST(SequenceParallelTraining, Bf16ComputeMatchesTheSingleRankRun) {
  using cmpi::testing::dims_of;
  using cmpi::testing::with_zero;
  constexpr double kBf16TensorParallelTolerance = 2e-3;
  auto c = cmpi::testing::tiny_neox_config(seed());
  c.training.precision = config::Precision::kBf16;
  expect_layouts_match(c, {{2, dims_of(1, 2), c, kBf16TensorParallelTolerance, "bf16 tp2"},
                           {4, dims_of(2, 2, 1, 1), with_zero(c, 1), kBf16TensorParallelTolerance,
                            "bf16 dp2 x tp2 zero1"}});
}

// The sequence regions' all-gathers and reduce-scatters take the policy's
// compressed ring algorithms: lossless mpc gives the identity codec's bits.
TEST(SequenceParallelTraining, LosslessMpcOnTpIsBitIdenticalToIdentity) {
  if (world_size() % 2 != 0) GTEST_SKIP() << "needs tp2";
  auto config = sequence_parallel(cmpi::testing::tiny_neox_config(seed() + 17));
  config.training.steps = 4;
  const auto run = [&](const std::string& codec) {
    return cmpi::testing::train_in_groups_of(
        2, config, cmpi::testing::dims_of(1, 2),
        cmpi::testing::every_message_of({comm::GroupKind::kTp}, codec));
  };
  const auto identity = run("identity"), mpc = run("mpc");
  ASSERT_EQ(identity.losses.size(), mpc.losses.size());
  for (size_t i = 0; i < identity.losses.size(); ++i)
    EXPECT_EQ(mpc.losses[i], identity.losses[i]) << "step " << i + 1;
}

}  // namespace
}  // namespace cmpi::parallel
