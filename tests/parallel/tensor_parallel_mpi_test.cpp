// Tensor parallelism must compute what the unsharded model computes. The
// whole MPI world is the tp group here (run on 2 and 4 ranks): every rank
// draws the same full tensors from the printed seed, computes the plain
// (unsharded) reference itself and compares its shard of the parallel
// result — forward outputs and the gradients of inputs and weights — with
// the matching slice of the reference. Then the GPT: its tp shards start as
// slices of the single-rank weights, its loss and gradients match, pipeline
// stage pieces chain to the whole model, and the Trainer's loss trajectory
// over 10 steps under tp2, tp4 and dp2+tp2 matches the single-rank run
// within a relative 1e-4 (lossless mpc on tp: bit-identical to identity).
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
#include "parallel/tensor/tensor_parallel_grad_norm.h"
#include "parallel/tensor/tensor_parallel_layers.h"
#include "parallel/tensor/tensor_parallel_ops.h"
#include "parallel/tensor/vocab_parallel_cross_entropy.h"
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
using tp_testing::max_difference;
using tp_testing::random_ids;
using tp_testing::random_normal;
using tp_testing::seed;
using tp_testing::slice_of;
using tp_testing::tiny_gpt_options;
using tp_testing::tp_dims;
using tp_testing::WorldTp;

// ---------------------------------------------------------------- ops

TEST_F(WorldTp, CopyToRegionIsIdentityForwardAndSumsGradients) {
  const auto full = random_normal({2, 3, 8}, 1);
  auto x = full.clone().requires_grad_(true);
  auto y = copy_to_tp_region(x, tp);
  EXPECT_TRUE(torch::equal(y, full));
  y.backward(random_normal({2, 3, 8}, 100 + uint64_t(rank)));
  auto sum = torch::zeros_like(full);
  for (int r = 0; r < parts; ++r) sum += random_normal({2, 3, 8}, 100 + uint64_t(r));
  EXPECT_TENSOR_NEAR(x.grad(), sum, "copy_to backward");
}

TEST_F(WorldTp, ReduceFromRegionSumsForwardAndPassesGradient) {
  auto x = random_normal({4, 5}, 10 + uint64_t(rank)).requires_grad_(true);
  auto y = reduce_from_tp_region(x, tp);
  auto sum = torch::zeros({4, 5});
  for (int r = 0; r < parts; ++r) sum += random_normal({4, 5}, 10 + uint64_t(r));
  EXPECT_TENSOR_NEAR(y, sum, "reduce_from forward");
  const auto grad = random_normal({4, 5}, 2);
  y.backward(grad);
  EXPECT_TRUE(torch::equal(x.grad(), grad));
}

// 16-bit tensors travel as 16-bit words (2 bytes a value in the stats), in
// and out in their dtype; with two ranks the sum is bit for bit what
// widening to float32, summing and rounding once gives (the path before
// 16-bit words), with more ranks within a rounding per reduction step.
TEST_F(WorldTp, SixteenBitTensorsTravelAsWords) {
  for (const auto dtype : {torch::kBFloat16, torch::kHalf}) {
    comm::Communicator words{MPI_COMM_WORLD, comm::GroupKind::kTp};
    const auto x = random_normal({3, 7}, 20 + uint64_t(rank)).to(dtype);
    const auto summed = tp_allreduce_sum(x, words, comm::Role::kActivation, 0);
    ASSERT_EQ(summed.scalar_type(), dtype);
    auto widened_sum = torch::zeros({3, 7});
    for (int r = 0; r < parts; ++r)
      widened_sum += random_normal({3, 7}, 20 + uint64_t(r)).to(dtype).to(torch::kFloat);
    if (parts == 2)
      EXPECT_TRUE(torch::equal(summed, widened_sum.to(dtype))) << c10::toString(dtype);
    else
      EXPECT_LE(max_difference(summed.to(torch::kFloat), widened_sum),
                0.02 * parts * std::max(1.0, widened_sum.abs().max().item<double>()));
    EXPECT_EQ(words.stats().at(comm::Op::kAllreduce).raw_bytes,
              comm::ring_allreduce_bytes(21, rank, parts, 2));

    const auto gathered = tp_allgather_last_dim(x, words, comm::Role::kActivation, 0);
    ASSERT_EQ(gathered.scalar_type(), dtype);
    for (int r = 0; r < parts; ++r)
      EXPECT_TRUE(torch::equal(gathered.narrow(-1, 7 * r, 7),
                               random_normal({3, 7}, 20 + uint64_t(r)).to(dtype)));
    EXPECT_EQ(words.stats().at(comm::Op::kAllgather).raw_bytes, uint64_t(21 * (parts - 1) * 2));
  }
}

TEST_F(WorldTp, GatherFromRegionConcatenatesLastDimAndSplitsGradient) {
  const auto full = random_normal({3, 2, 4 * parts}, 3);
  auto x = slice_of(full, 2, rank, parts).clone().requires_grad_(true);
  auto y = gather_from_tp_region(x, tp);
  EXPECT_TRUE(torch::equal(y, full)) << "gathered slices are the full tensor, in rank order";
  const auto grad = random_normal({3, 2, 4 * parts}, 4);
  y.backward(grad);
  EXPECT_TRUE(torch::equal(x.grad(), slice_of(grad, 2, rank, parts)));
}

TEST_F(WorldTp, ScatterToRegionKeepsOwnSliceAndGathersGradient) {
  const auto full = random_normal({5, 3 * parts}, 5);
  auto x = full.clone().requires_grad_(true);
  auto y = scatter_to_tp_region(x, tp);
  EXPECT_TRUE(torch::equal(y, slice_of(full, 1, rank, parts)));
  const auto grad = random_normal({5, 3 * parts}, 6);
  y.backward(slice_of(grad, 1, rank, parts));
  EXPECT_TRUE(torch::equal(x.grad(), grad));
  EXPECT_THROW(scatter_to_tp_region(torch::zeros({2, 3 * parts + 1}), tp), std::invalid_argument);
}

TEST_F(WorldTp, OpsRejectNonFloatTensors) {
  EXPECT_THROW(copy_to_tp_region(torch::zeros({2}, torch::kDouble), tp), std::invalid_argument);
  EXPECT_THROW(reduce_from_tp_region(torch::zeros({2}, torch::kLong), tp), std::invalid_argument);
}

// Forward traffic is routed as role `activation`, backward as
// `activation_grad`: a rule matching only activation_grad on tp (identity
// codec, so the compressed path runs) catches the backward allreduce alone.
TEST(TensorParallelRoles, ForwardIsActivationBackwardIsActivationGrad) {
  comm::PolicyConfig policy;
  comm::PolicyRule rule;
  rule.match.groups = {comm::GroupKind::kTp};
  rule.match.roles = {comm::Role::kActivationGrad};
  rule.match.min_bytes = 0;
  rule.codec = compress::CodecSpec("identity");
  policy.rules.push_back(rule);
  ParallelDims dims;
  dims.tp = world_size();
  ProcessGroups groups(MPI_COMM_WORLD, dims, policy);
  auto& stats = groups.tp().stats().at(comm::Op::kAllreduce);

  auto x = random_normal({2, 16}, 7).requires_grad_(true);
  auto y = reduce_from_tp_region(copy_to_tp_region(x, groups.tp()) * 2.0, groups.tp());
  EXPECT_EQ(stats.calls, 1u);
  EXPECT_EQ(stats.compressed_calls, 0u) << "forward allreduce must not be activation_grad";
  y.sum().backward();
  EXPECT_EQ(stats.calls, 2u);
  EXPECT_EQ(stats.compressed_calls, 1u) << "backward allreduce must be activation_grad";
  EXPECT_TENSOR_NEAR(x.grad(), torch::full({2, 16}, 2.0 * world_size()), "d/dx of 2x summed");
}

// ---------------------------------------------------------------- layers

TEST_F(WorldTp, ColumnParallelLinearMatchesUnshardedLinear) {
  const int64_t in = 6, out = 4 * parts;
  const auto weight = random_normal({out, in}, 20), bias = random_normal({out}, 21);
  const auto input = random_normal({2, 3, in}, 22), grad_out = random_normal({2, 3, out}, 23);
  auto ref_x = input.clone().requires_grad_(true);
  auto ref_w = weight.clone().requires_grad_(true), ref_b = bias.clone().requires_grad_(true);
  auto ref_y = torch::nn::functional::linear(ref_x, ref_w, ref_b);
  ref_y.backward(grad_out);

  for (bool gather : {false, true}) {
    SCOPED_TRACE(gather ? "gather_output" : "split output");
    ParallelLinearOptions options;
    options.in_features = in;
    options.out_features = out;
    options.gather_output = gather;
    ColumnParallelLinear layer(options, tp);
    {
      torch::NoGradGuard no_grad;
      layer->weight.copy_(slice_of(weight, 0, rank, parts));
      layer->bias.copy_(slice_of(bias, 0, rank, parts));
    }
    auto x = input.clone().requires_grad_(true);
    auto y = layer->forward(x);
    EXPECT_TENSOR_NEAR(y, gather ? ref_y : slice_of(ref_y, 2, rank, parts), "output");
    y.backward(gather ? grad_out : slice_of(grad_out, 2, rank, parts));
    EXPECT_TENSOR_NEAR(x.grad(), ref_x.grad(), "input gradient");
    EXPECT_TENSOR_NEAR(layer->weight.grad(), slice_of(ref_w.grad(), 0, rank, parts), "dW");
    EXPECT_TENSOR_NEAR(layer->bias.grad(), slice_of(ref_b.grad(), 0, rank, parts), "db");
  }
}

TEST_F(WorldTp, RowParallelLinearMatchesUnshardedLinear) {
  const int64_t in = 4 * parts, out = 5;
  const auto weight = random_normal({out, in}, 30), bias = random_normal({out}, 31);
  const auto input = random_normal({2, 3, in}, 32), grad_out = random_normal({2, 3, out}, 33);
  auto ref_x = input.clone().requires_grad_(true);
  auto ref_w = weight.clone().requires_grad_(true), ref_b = bias.clone().requires_grad_(true);
  auto ref_y = torch::nn::functional::linear(ref_x, ref_w, ref_b);
  ref_y.backward(grad_out);

  for (bool parallel_input : {true, false}) {
    SCOPED_TRACE(parallel_input ? "input split" : "input full");
    ParallelLinearOptions options;
    options.in_features = in;
    options.out_features = out;
    options.input_is_parallel = parallel_input;
    RowParallelLinear layer(options, tp);
    {
      torch::NoGradGuard no_grad;
      layer->weight.copy_(slice_of(weight, 1, rank, parts));
      layer->bias.copy_(bias);
    }
    auto x =
        (parallel_input ? slice_of(input, 2, rank, parts) : input).clone().requires_grad_(true);
    auto y = layer->forward(x);
    EXPECT_TENSOR_NEAR(y, ref_y, "output (bias added once)");
    y.backward(grad_out);
    EXPECT_TENSOR_NEAR(x.grad(),
                       parallel_input ? slice_of(ref_x.grad(), 2, rank, parts) : ref_x.grad(),
                       "input gradient");
    EXPECT_TENSOR_NEAR(layer->weight.grad(), slice_of(ref_w.grad(), 1, rank, parts), "dW");
    EXPECT_TENSOR_NEAR(layer->bias.grad(), ref_b.grad(), "db");
  }
}

TEST_F(WorldTp, VocabParallelEmbeddingMatchesFullTable) {
  const int64_t vocab = 8 * parts, hidden = 6;
  const auto table = random_normal({vocab, hidden}, 40);
  auto ids = random_ids({3, 7}, vocab, 41);
  ids[0][0] = 0;  // both ends of the vocabulary
  ids[0][1] = vocab - 1;
  const auto grad_out = random_normal({3, 7, hidden}, 42);
  auto ref_table = table.clone().requires_grad_(true);
  auto ref_y = torch::embedding(ref_table, ids);
  ref_y.backward(grad_out);

  VocabParallelEmbedding layer(vocab, hidden, tp);
  EXPECT_EQ(layer->first_id(), rank * (vocab / parts));
  {
    torch::NoGradGuard no_grad;
    layer->weight.copy_(slice_of(table, 0, rank, parts));
  }
  auto y = layer->forward(ids);
  EXPECT_TENSOR_NEAR(y, ref_y, "embedding");
  y.backward(grad_out);
  EXPECT_TENSOR_NEAR(layer->weight.grad(), slice_of(ref_table.grad(), 0, rank, parts),
                     "table gradient");

  EXPECT_THROW(layer->forward(torch::full({1, 2}, vocab, torch::kLong)), std::invalid_argument);
  EXPECT_THROW(layer->forward(torch::full({1, 2}, -1, torch::kLong)), std::invalid_argument);
}

TEST_F(WorldTp, VocabParallelLogitsMatchFullProjection) {
  const int64_t vocab = 8 * parts, hidden = 6;
  const auto table = random_normal({vocab, hidden}, 50),
             hidden_in = random_normal({2, 3, hidden}, 51);
  const auto grad_out = random_normal({2, 3, vocab}, 52);
  auto ref_h = hidden_in.clone().requires_grad_(true);
  auto ref_table = table.clone().requires_grad_(true);
  auto ref_logits = torch::matmul(ref_h, ref_table.t());
  ref_logits.backward(grad_out);

  auto h = hidden_in.clone().requires_grad_(true);
  auto shard = slice_of(table, 0, rank, parts).clone().requires_grad_(true);
  auto logits = vocab_parallel_logits(h, shard, tp);
  EXPECT_TENSOR_NEAR(logits, slice_of(ref_logits, 2, rank, parts), "logit slice");
  logits.backward(slice_of(grad_out, 2, rank, parts));
  EXPECT_TENSOR_NEAR(h.grad(), ref_h.grad(), "hidden gradient (summed over the vocab slices)");
  EXPECT_TENSOR_NEAR(shard.grad(), slice_of(ref_table.grad(), 0, rank, parts), "table gradient");
}

// ---------------------------------------------------------------- cross-entropy

void expect_cross_entropy_matches(comm::Communicator& tp, const torch::Tensor& full_logits,
                                  const torch::Tensor& targets, uint64_t stream) {
  const int rank = tp.rank(), parts = tp.size();
  const int64_t vocab = full_logits.size(-1);
  auto ref_logits = full_logits.clone().requires_grad_(true);
  auto ref_losses = torch::nn::functional::cross_entropy(
      ref_logits.view({-1, vocab}), targets.reshape({-1}),
      torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
  const auto weights = random_normal({targets.numel()}, stream).abs() + 0.1;
  (ref_losses * weights).sum().backward();

  auto shard = slice_of(full_logits, -1, rank, parts).clone().requires_grad_(true);
  auto losses = vocab_parallel_cross_entropy(shard, targets, tp);
  EXPECT_EQ(losses.sizes(), targets.sizes());
  EXPECT_TENSOR_NEAR(losses.reshape({-1}), ref_losses, "per-token losses");
  (losses.reshape({-1}) * weights).sum().backward();
  EXPECT_TENSOR_NEAR(shard.grad(), slice_of(ref_logits.grad(), -1, rank, parts),
                     "logit gradient (softmax - one-hot)");
}

TEST_F(WorldTp, VocabParallelCrossEntropyMatchesTorchOnGatheredLogits) {
  const int64_t vocab = 16 * parts;
  const auto logits = random_normal({3, 5, vocab}, 60) * 3.0;
  auto targets = random_ids({3, 5}, vocab, 61);
  targets[0][0] = 0;
  targets[0][1] = vocab - 1;
  expect_cross_entropy_matches(tp, logits, targets, 62);
}

// Logits far from zero with the maximum on one rank only: the gathered
// (max, sum) pairs must still combine without overflow.
TEST_F(WorldTp, VocabParallelCrossEntropyIsStableForLargeLogits) {
  const int64_t vocab = 8 * parts;
  auto logits = random_normal({4, vocab}, 63) + 80.0;
  logits.narrow(1, vocab - 8, 8).add_(40.0);  // last rank's slice dominates
  const auto targets = random_ids({4}, vocab, 64);
  expect_cross_entropy_matches(tp, logits, targets, 65);
}

TEST_F(WorldTp, VocabParallelCrossEntropyMeanMatchesTorchMean) {
  const int64_t vocab = 4 * parts;
  const auto full = random_normal({2, 3, vocab}, 66);
  const auto targets = random_ids({2, 3}, vocab, 67);
  auto ref = full.clone().requires_grad_(true);
  auto ref_loss =
      torch::nn::functional::cross_entropy(ref.view({-1, vocab}), targets.reshape({-1}));
  ref_loss.backward();
  auto shard = slice_of(full, 2, rank, parts).clone().requires_grad_(true);
  auto loss = vocab_parallel_cross_entropy(shard, targets, tp).mean();
  EXPECT_NEAR(loss.item<double>(), ref_loss.item<double>(), kTolerance);
  loss.backward();
  EXPECT_TENSOR_NEAR(shard.grad(), slice_of(ref.grad(), 2, rank, parts), "gradient of the mean");
}

TEST_F(WorldTp, VocabParallelCrossEntropyRejectsBadTargets) {
  const int64_t vocab = 4 * parts;
  const auto shard = torch::zeros({2, 4});
  auto ids = [](std::vector<int64_t> v) { return torch::tensor(v); };
  EXPECT_THROW(vocab_parallel_cross_entropy(shard, ids({0, vocab}), tp), std::invalid_argument);
  EXPECT_THROW(vocab_parallel_cross_entropy(shard, ids({-1, 0}), tp), std::invalid_argument);
  EXPECT_THROW(vocab_parallel_cross_entropy(shard, ids({0, 1, 2}), tp), std::invalid_argument)
      << "shape mismatch";
  EXPECT_THROW(vocab_parallel_cross_entropy(shard, torch::zeros({2}, torch::kInt), tp),
               std::invalid_argument)
      << "int32 targets";
}

// ---------------------------------------------------------------- the GPT

TEST(TensorParallelGpt, ShardsLossAndGradientsMatchTheSingleRankModel) {
  const auto options = tiny_gpt_options();
  const auto tokens = random_ids({2, 16}, options.vocab_size, 70);
  const auto targets = random_ids({2, 16}, options.vocab_size, 71);

  ProcessGroups single_groups(MPI_COMM_SELF, ParallelDims{});
  models::Gpt single(options, single_groups);
  auto single_loss = single->loss(tokens, targets);
  single_loss.backward();
  const auto single_params = by_name(single->param_infos());
  const double single_norm = tensor_parallel_grad_norm(single->param_infos(), single_groups.tp());

  ProcessGroups groups(MPI_COMM_WORLD, tp_dims(world_size()));
  const int rank = groups.tp().rank(), parts = groups.tp().size();
  models::Gpt model(options, groups);
  ASSERT_EQ(model->layouts().size(), single_params.size());
  for (const auto& layout : model->layouts()) {
    SCOPED_TRACE(layout.name);
    const auto& full = single_params.at(layout.name);
    const auto expected =
        layout.split_dim >= 0 ? slice_of(full, layout.split_dim, rank, parts) : full;
    EXPECT_TRUE(torch::equal(layout.tensor, expected)) << "initial shard = slice of 1-rank weight";
  }
  tp_testing::expect_shards_match_single_rank(model, tokens, targets, single_loss, single_params,
                                              rank, parts);
  EXPECT_NEAR(tensor_parallel_grad_norm(model->param_infos(), groups.tp()), single_norm,
              kTolerance * single_norm)
      << "the global norm counts every tp shard once";
}

TEST(TensorParallelGpt, ParamInfosMarkShardsAndWeightDecay) {
  ProcessGroups groups(MPI_COMM_WORLD, tp_dims(world_size()));
  models::Gpt model(tiny_gpt_options(), groups);
  const std::map<std::string, std::pair<bool, bool>> expected = {
      // name: {tensor_parallel, weight_decay}
      {"token_embedding.weight", {true, true}},      {"position_embedding.weight", {false, false}},
      {"block1.ln1.weight", {false, false}},         {"block1.ln2.bias", {false, false}},
      {"block1.attention.qkv.weight", {true, true}}, {"block1.attention.qkv.bias", {true, false}},
      {"block1.attention.out.weight", {true, true}}, {"block1.attention.out.bias", {false, false}},
      {"block0.fc_in.weight", {true, true}},         {"block0.fc_in.bias", {true, false}},
      {"block0.fc_out.weight", {true, true}},        {"block0.fc_out.bias", {false, false}},
      {"final_norm.weight", {false, false}},
  };
  const auto infos = model->param_infos();
  EXPECT_EQ(infos.size(), 4u + 2 * 12u);
  size_t seen = 0;
  for (const auto& info : infos) {
    auto found = expected.find(info.name);
    if (found == expected.end()) continue;
    ++seen;
    EXPECT_EQ(info.tensor_parallel, found->second.first) << info.name;
    EXPECT_EQ(info.weight_decay, found->second.second) << info.name;
  }
  EXPECT_EQ(seen, expected.size());
}

// Two pipeline-stage pieces chained by hand equal the whole model; the
// head-only stage starts with the same tied table as the embedding stage.
TEST(TensorParallelGpt, StagePiecesChainToTheWholeModel) {
  const auto options = tiny_gpt_options(3);
  const auto tokens = random_ids({2, 12}, options.vocab_size, 80);
  const auto targets = random_ids({2, 12}, options.vocab_size, 81);
  ProcessGroups groups(MPI_COMM_WORLD, tp_dims(world_size()));
  models::Gpt whole(options, groups);
  models::Gpt first(options, groups, models::StagePlan{0, 1, true, false});
  models::Gpt last(options, groups, models::StagePlan{1, 3, false, true});

  auto whole_loss = whole->loss(tokens, targets);
  whole_loss.backward();
  auto boundary = first->run_blocks(first->embed(tokens)).detach().requires_grad_(true);
  auto loss = last->head_loss(last->run_blocks(boundary), targets);
  EXPECT_NEAR(loss.item<double>(), whole_loss.item<double>(), kTolerance);
  loss.backward();
  first->run_blocks(first->embed(tokens)).backward(boundary.grad());

  const auto whole_params = by_name(whole->param_infos());
  size_t names = 0;
  for (const auto* stage : {&first, &last})
    for (const auto& info : (*stage)->param_infos()) {
      ++names;
      ASSERT_TRUE(whole_params.count(info.name)) << info.name;
      EXPECT_TRUE(torch::equal(info.tensor, whole_params.at(info.name))) << info.name;
      if (info.name != "token_embedding.weight")
        EXPECT_TENSOR_NEAR(info.tensor.grad(), whole_params.at(info.name).grad(), info.name);
    }
  EXPECT_EQ(names, whole_params.size() + 1) << "only the tied table is held twice";
  EXPECT_TENSOR_NEAR(first->tied_embedding_weight().grad() + last->tied_embedding_weight().grad(),
                     whole->tied_embedding_weight().grad(), "tied table: the copies' grads sum");
  EXPECT_THROW(first->loss(tokens, targets), std::logic_error);
  EXPECT_THROW(last->embed(tokens), std::logic_error);
  EXPECT_THROW(models::Gpt(options, groups, models::StagePlan{2, 4, true, true}),
               std::invalid_argument);
}

// With dropout, what is replicated over tp (the residual stream, the loss,
// LayerNorm gradients) must stay identical on every tp rank; only dropout
// inside the tp region (attention probabilities) may differ per rank.
TEST(TensorParallelGpt, DropoutKeepsReplicasIdenticalAcrossTp) {
  auto options = tiny_gpt_options();
  options.dropout = 0.2;
  const auto tokens = random_ids({2, 16}, options.vocab_size, 90);
  const auto targets = random_ids({2, 16}, options.vocab_size, 91);
  ProcessGroups groups(MPI_COMM_WORLD, tp_dims(world_size()));
  torch::manual_seed(cmpi::testing::test_seed());  // the trainer seeds every rank alike
  models::Gpt model(options, groups);
  model->train();
  auto loss = model->loss(tokens, targets);
  loss.backward();
  tp_testing::expect_same_on_every_rank(
      tp_testing::loss_and_replicated_gradient_sums(loss, model->param_infos()));
  model->eval();
  auto eval_loss = model->loss(tokens, targets).item<double>();
  EXPECT_NE(eval_loss, loss.item<double>()) << "dropout is active in training mode";
}

// ---------------------------------------------------------------- training

config::Config small_config(uint64_t seed) {
  config::Config c = cmpi::testing::tiny_gpt_config(seed);
  c.training.grad_clip = 0.5;  // active: the tp-aware norm matters
  c.parallel.dp_bucket_bytes = 16 << 10;
  return c;
}

constexpr double kTrajectoryTolerance = 1e-4;  // relative, per step

// Splits the world into groups of `size` consecutive ranks and trains on each.
std::vector<double> train_in_groups_of(int size, const config::Config& config, int dp, int tp,
                                       const comm::PolicyConfig& policy = {}) {
  return cmpi::testing::train_in_groups_of(size, config, cmpi::testing::dims_of(dp, tp), policy)
      .losses;
}

TEST(TensorParallelTraining, LossTrajectoryMatchesSingleRank) {
  using cmpi::testing::expect_same_trajectory;
  const auto config = small_config(seed());
  const std::vector<double> reference = cmpi::testing::single_rank_losses(config);
  EXPECT_LT(reference.back(), reference.front()) << "the 1-rank run should learn";

  expect_same_trajectory(reference, train_in_groups_of(2, config, 1, 2), kTrajectoryTolerance,
                         "tp2");
  if (world_size() % 4 == 0) {
    expect_same_trajectory(reference, train_in_groups_of(4, config, 1, 4), kTrajectoryTolerance,
                           "tp4");
    expect_same_trajectory(reference, train_in_groups_of(4, config, 2, 2), kTrajectoryTolerance,
                           "dp2+tp2");
  }
}

// mpc is lossless: the compressed tp path with mpc gives the same bits as
// with the identity codec on the same algorithms.
TEST(TensorParallelTraining, LosslessMpcOnTpIsBitIdenticalToIdentity) {
  auto config = small_config(seed() + 17);
  config.training.steps = 4;
  const auto identity = train_in_groups_of(
      2, config, 1, 2, cmpi::testing::every_message_of({comm::GroupKind::kTp}, "identity"));
  const auto mpc = train_in_groups_of(
      2, config, 1, 2, cmpi::testing::every_message_of({comm::GroupKind::kTp}, "mpc"));
  ASSERT_EQ(identity.size(), mpc.size());
  for (size_t i = 0; i < identity.size(); ++i) EXPECT_EQ(mpc[i], identity[i]) << "step " << i + 1;
}

}  // namespace
}  // namespace cmpi::parallel
