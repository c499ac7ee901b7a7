// parallel.pipeline_balance: auto, without MPI or torch: the min-max split
// against an exhaustive search over every split of small models (random
// stage costs, seeds printed), equal costs giving the uniform split, and on a
// GPT whose vocabulary makes the embedding and head heavy, the memory
// estimate's split giving the end stages fewer layers and a smaller largest
// stage than the uniform split.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <vector>

#include "parallel/memory_estimate.h"
#include "parallel/pipeline/pipeline_balance.h"
#include "parallel/pipeline/pipeline_stages.h"

namespace cmpi::parallel {
namespace {

using Table = std::vector<std::vector<long double>>;  // [stage][layers]

long double largest(const Table& cost, const std::vector<int64_t>& counts) {
  long double worst = 0;
  for (size_t s = 0; s < counts.size(); ++s) worst = std::max(worst, cost[s][size_t(counts[s])]);
  return worst;
}

// The smallest largest-stage cost over every split of `layers` into `stages`.
long double exhaustive_best(const Table& cost, int64_t layers, int64_t stages) {
  long double best = -1;
  std::vector<int64_t> counts(size_t(stages), 1);
  std::function<void(int64_t, int64_t)> place = [&](int64_t stage, int64_t left) {
    if (stage + 1 == stages) {
      counts[size_t(stage)] = left;
      const long double worst = largest(cost, counts);
      if (best < 0 || worst < best) best = worst;
      return;
    }
    for (int64_t k = 1; k <= left - (stages - stage - 1); ++k) {
      counts[size_t(stage)] = k;
      place(stage + 1, left - k);
    }
  };
  place(0, layers);
  return best;
}

TEST(PipelineBalance, MinMaxSplitMatchesAnExhaustiveSearch) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 random(seed);
    for (int64_t layers = 1; layers <= 9; ++layers)
      for (int64_t stages = 1; stages <= std::min<int64_t>(layers, 4); ++stages) {
        // Costs that grow with the layer count, from a random base per stage.
        Table cost(size_t(stages), std::vector<long double>(size_t(layers) + 1, 0));
        for (auto& row : cost) {
          long double total = std::uniform_real_distribution<double>(0, 5)(random);
          for (size_t k = 1; k < row.size(); ++k)
            row[k] = total += std::uniform_real_distribution<double>(0.1, 2)(random);
        }
        const auto counts = min_max_stage_layers(
            layers, stages, [&](int64_t s, int64_t k) { return cost[size_t(s)][size_t(k)]; });
        const std::string what = "seed " + std::to_string(seed) + ", " + std::to_string(layers) +
                                 " layers over " + std::to_string(stages) + " stages";
        ASSERT_EQ(int64_t(counts.size()), stages) << what;
        int64_t sum = 0;
        for (int64_t k : counts) {
          EXPECT_GE(k, 1) << what;
          sum += k;
        }
        EXPECT_EQ(sum, layers) << what;
        EXPECT_EQ(largest(cost, counts), exhaustive_best(cost, layers, stages)) << what;
      }
  }
}

TEST(PipelineBalance, EqualStageCostsGiveTheUniformSplit) {
  for (int64_t layers = 1; layers <= 12; ++layers)
    for (int64_t stages = 1; stages <= layers && stages <= 5; ++stages)
      EXPECT_EQ(
          min_max_stage_layers(layers, stages, [](int64_t, int64_t k) { return (long double)k; }),
          balanced_stage_layers(layers, stages))
          << layers << " layers over " << stages << " stages";
  EXPECT_THROW(min_max_stage_layers(2, 3, [](int64_t, int64_t k) { return (long double)k; }),
               std::invalid_argument);
}

MemoryEstimateInput heavy_vocabulary_gpt() {
  MemoryEstimateInput in;
  in.vocab_size = 50304;
  in.seq_len = 512;
  in.layers = 16;
  in.hidden = 512;
  in.heads = 8;
  in.mlp_ratio = 4;
  in.pp = 4;
  in.micro_batch = 2;
  in.micro_batches = 8;
  in.bucket_bytes = 25 << 20;
  return in;
}

long double largest_total(const std::vector<MemoryEstimate>& stages) {
  long double worst = 0;
  for (const auto& e : stages) worst = std::max(worst, e.total());
  return worst;
}

TEST(PipelineBalance, AutoCountsTheEmbeddingAndHead) {
  MemoryEstimateInput in = heavy_vocabulary_gpt();
  const auto uniform = estimate_stage_memory(in);
  EXPECT_EQ(stage_layers_of(in), std::vector<int64_t>{});
  in.auto_balance = true;
  const auto counts = stage_layers_of(in);
  ASSERT_EQ(counts.size(), 4u);
  EXPECT_LT(counts.front(), 4) << "stage 0 holds the embedding and 4 micro-batches";
  EXPECT_LT(counts.back(), 4) << "the last stage holds the head and its logits";
  const auto balanced = estimate_stage_memory(in);
  EXPECT_LT(largest_total(balanced), largest_total(uniform));
  for (size_t s = 0; s < counts.size(); ++s) EXPECT_EQ(balanced[s].layers, counts[s]);
  // An explicit list wins over auto.
  in.stage_layers = {1, 5, 5, 5};
  EXPECT_EQ(stage_layers_of(in), (std::vector<int64_t>{1, 5, 5, 5}));
}

}  // namespace
}  // namespace cmpi::parallel
