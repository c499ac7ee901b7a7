// Activation recomputation (training.recompute) against the run that keeps
// every activation: on one rank, a GPT's loss and every parameter gradient
// are bit-identical with selective and full recomputation (dropout on,
// sequential and parallel residual, rotary), and recomputing keeps fewer
// bytes between forward and backward (counted by the allocator); on tp2,
// pp2 and dp2 ZeRO-3 (per layer), ten training steps with dropout give the
// same losses bit for bit as the same layout without recomputation.
#include <gtest/gtest.h>
#include <mpi.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "models/gpt.h"
#include "parallel/mesh/process_groups.h"
#include "tests/support/counting_allocator.h"
#include "tests/support/mpi_world.h"
#include "tests/support/test_seed.h"
#include "tests/support/tiny_gpt_run.h"

namespace cmpi::models {
namespace {

using cmpi::testing::world_size;

GptOptions small_gpt(uint64_t seed, bool neox) {
  GptOptions o;
  o.vocab_size = 64;
  o.seq_len = 16;
  o.layers = 3;
  o.hidden = 32;
  o.heads = 4;
  o.dropout = 0.1;
  o.seed = seed;
  if (neox) {
    o.position = PositionEncoding::kRotary;
    o.parallel_residual = true;
    o.activation = MlpActivation::kGeluTanh;
    o.tie_embeddings = false;
  }
  return o;
}

struct Pass {
  std::vector<double> losses;
  std::vector<torch::Tensor> grads;  // registration order, after every pass
  int64_t held_after_forward = 0;    // bytes the first forward left alive
};

// Two forward + backward passes on the same model (gradients accumulate;
// the second pass draws its dropout masks after the first's recomputation
// has put the generators back), the default generator seeded once.
// `counted` must outlive the Pass (its tensors report their release to it).
Pass run_passes(GptOptions options, Recompute recompute, int64_t recompute_layers,
                cmpi::testing::CountedAllocations& counted) {
  options.recompute = recompute;
  options.recompute_layers = recompute_layers;
  parallel::ProcessGroups groups(MPI_COMM_SELF, parallel::ParallelDims{});
  Gpt model(options, groups);
  model->train();
  torch::manual_seed(int64_t(options.seed) + 7);
  Pass pass;
  for (int i = 0; i < 2; ++i) {
    const auto tokens = torch::randint(options.vocab_size, {4, options.seq_len}, torch::kLong);
    const auto targets = torch::randint(options.vocab_size, {4, options.seq_len}, torch::kLong);
    const int64_t before = counted.live();
    auto loss = model->loss(tokens, targets);
    if (i == 0) pass.held_after_forward = counted.live() - before;
    pass.losses.push_back(loss.item<double>());
    loss.backward();
  }
  for (const auto& info : model->param_infos()) pass.grads.push_back(info.tensor.grad().clone());
  return pass;
}

void expect_identical(const Pass& reference, const Pass& other, const std::string& what) {
  ASSERT_EQ(reference.losses.size(), other.losses.size());
  for (size_t i = 0; i < reference.losses.size(); ++i)
    EXPECT_EQ(reference.losses[i], other.losses[i]) << what << " pass " << i;
  ASSERT_EQ(reference.grads.size(), other.grads.size());
  for (size_t i = 0; i < reference.grads.size(); ++i)
    EXPECT_TRUE(torch::equal(reference.grads[i], other.grads[i]))
        << what << ": gradient of parameter " << i << " differs by up to "
        << (reference.grads[i] - other.grads[i]).abs().max().item<double>();
}

TEST(Recompute, GradientsEqualTheStoredRunBitForBit) {
  if (cmpi::testing::world_rank() != 0) return;
  cmpi::testing::CountedAllocations counted;
  const uint64_t seed = cmpi::testing::test_seed() % 100000;
  for (bool neox : {false, true}) {
    SCOPED_TRACE(std::string(neox ? "neox" : "gpt2") + " seed " + std::to_string(seed));
    const auto options = small_gpt(seed, neox);
    const Pass stored = run_passes(options, Recompute::kNone, 0, counted);
    expect_identical(stored, run_passes(options, Recompute::kSelective, 0, counted), "selective");
    expect_identical(stored, run_passes(options, Recompute::kFull, 0, counted), "full");
    expect_identical(stored, run_passes(options, Recompute::kFull, 2, counted),
                     "full, 2 of 3 blocks");
  }
}

// What forward leaves for backward shrinks: selective drops the [B, h, T, T]
// scores, probabilities and dropout masks; full keeps one input per block.
TEST(Recompute, KeepsFewerBytesBetweenForwardAndBackward) {
  if (cmpi::testing::world_rank() != 0) return;
  const uint64_t seed = cmpi::testing::test_seed() % 100000 + 1;
  auto options = small_gpt(seed, false);
  options.layers = 4;
  cmpi::testing::CountedAllocations counted;
  const auto held = [&](Recompute what, int64_t layers) {
    return run_passes(options, what, layers, counted).held_after_forward;
  };
  const int64_t none = held(Recompute::kNone, 0);
  const int64_t selective = held(Recompute::kSelective, 0);
  const int64_t half = held(Recompute::kFull, 2);
  const int64_t full = held(Recompute::kFull, 0);
  ASSERT_GT(none, 0) << "the counting allocator does not see LibTorch's CPU allocations";
  // Per block, selective frees the [B, h, T, T] = 4·4·16·16 floats autograd
  // keeps for the core's backward (the probabilities, the dropout mask, the
  // dropped probabilities: at least two of them however autograd saves).
  const int64_t scores = 4 * 4 * 16 * 16 * int64_t(sizeof(float));
  EXPECT_LE(selective, none - options.layers * 2 * scores)
      << "none " << none << ", selective " << selective << " bytes, seed " << seed;
  EXPECT_LT(full, half) << "seed " << seed;
  EXPECT_LT(half, none) << "seed " << seed;
  // Full keeps each block's input ([B, T, H]) and no more inside the blocks.
  const int64_t block_input = 4 * 16 * 32 * int64_t(sizeof(float));
  EXPECT_LT(full, selective) << "seed " << seed;
  EXPECT_GE(full, options.layers * block_input) << "seed " << seed;
}

config::Config recompute_config(uint64_t seed) {
  config::Config c = cmpi::testing::tiny_gpt_config(seed);
  c.model.dropout = 0.1;
  c.model.layers = 3;
  c.training.steps = 6;
  c.training.grad_clip = 0.5;
  c.parallel.dp_bucket_bytes = 4 << 10;
  return c;
}

parallel::ParallelDims dims_of(int dp, int tp, int pp, int zero_stage) {
  parallel::ParallelDims d;
  d.dp = dp;
  d.tp = tp;
  d.pp = pp;
  d.zero_stage = zero_stage;
  return d;
}

void expect_same_losses(const std::vector<double>& stored, const std::vector<double>& recomputed,
                        const std::string& what) {
  ASSERT_EQ(stored.size(), recomputed.size()) << what;
  for (size_t i = 0; i < stored.size(); ++i)
    EXPECT_EQ(stored[i], recomputed[i]) << what << " step " << i + 1;
}

TEST(Recompute, TrajectoriesEqualTheStoredRunInEveryLayout) {
  const uint64_t seed = cmpi::testing::test_seed() % 100000 + 2;
  struct Layout {
    const char* name;
    parallel::ParallelDims dims;
  };
  std::vector<Layout> layouts = {{"1 rank", dims_of(1, 1, 1, 0)}};
  if (world_size() >= 2) {
    layouts.push_back({"tp2", dims_of(1, 2, 1, 0)});
    layouts.push_back({"pp2", dims_of(1, 1, 2, 0)});
    layouts.push_back({"dp2 zero3 per layer", dims_of(2, 1, 1, 3)});
  }
  for (const auto& layout : layouts) {
    const int ranks = layout.dims.dp * layout.dims.tp * layout.dims.pp;
    auto config = recompute_config(seed);
    config.parallel.tensor = layout.dims.tp;
    config.parallel.pipeline = layout.dims.pp;
    config.parallel.zero_stage = layout.dims.zero_stage;
    const auto stored = cmpi::testing::train_in_groups_of(ranks, config, layout.dims).losses;
    for (const char* mode : {"selective", "full"}) {
      SCOPED_TRACE(std::string(layout.name) + ", recompute " + mode + ", seed " +
                   std::to_string(seed));
      config.training.recompute = mode;
      expect_same_losses(stored,
                         cmpi::testing::train_in_groups_of(ranks, config, layout.dims).losses,
                         std::string(layout.name) + " " + mode);
    }
  }
}

}  // namespace
}  // namespace cmpi::models
