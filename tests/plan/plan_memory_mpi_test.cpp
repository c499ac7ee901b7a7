// Plan = measurement for memory: trains a GPT whose activations outweigh its
// parameters (4 blocks of hidden 64, 128 tokens per sequence, dropout on)
// for two steps in 18 layouts (recompute none / selective / full, ZeRO 1,
// 2 and 3, ZeRO 2/3 holding only the gradient shard, dp, tp and pp 1 and 2, tp2 with sequence
// parallelism, cp2; and Llama's architecture in six of them) with LibTorch's CPU allocations counted
// (tests/support/counting_allocator.h), and holds every rank's peak to the planner's estimate for
// its pipeline stage (parallel/memory_estimate.h: parameters + gradients + optimizer + activations
// + buffers + pipeline messages; not the runtime or the communication scratch, which LibTorch does
// not allocate): within 10 % (one cell 15 %, saying why). Rank 0 prints the table docs/planner.md
// shows.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "models/family/model_family.h"
#include "tests/support/counting_allocator.h"
#include "tests/support/mpi_world.h"
#include "tests/support/test_seed.h"
#include "tests/support/tiny_gpt_run.h"

namespace cmpi::plan {
namespace {

using cmpi::testing::world_rank;
using cmpi::testing::world_size;

struct Layout {
  const char* name;
  int dp, tp, pp, zero_stage;
  const char* recompute;
  // Held to 10 % unless a reason says otherwise (docs/planner.md).
  double tolerance = 0.10;
  const char* gradient_memory = "full_buffer";  // parallel.zero_gradient_memory
  bool sequence_parallel = false;
  // Llama's switches: grouped-query attention (2 key/value heads of 4), a
  // SwiGLU MLP (three matrices, gate and up products kept), RMSNorm, no
  // biases, rotary, an untied head.
  bool llama = false;
  int cp = 1;  // context parallelism: the ring attention, 1/cp of the tokens
};

config::Config measured_config(uint64_t seed, const Layout& l) {
  config::Config c = cmpi::testing::tiny_gpt_config(seed);
  c.model.vocab_size = 256;
  c.model.seq_len = 128;
  c.model.layers = 4;
  c.model.dropout = 0.1;
  c.model.hidden = 64;
  c.model.heads = 4;
  c.training.steps = 2;
  c.training.warmup_steps = 1;
  c.training.micro_batch = 4;
  c.training.global_batch = 8 * l.dp;  // two micro-batches per rank
  c.training.recompute = l.recompute;
  c.parallel.tensor = l.tp;
  c.parallel.pipeline = l.pp;
  c.parallel.zero_stage = l.zero_stage;
  c.parallel.zero_gradient_memory = l.gradient_memory;
  c.parallel.sequence_parallel = l.sequence_parallel;
  c.parallel.context = l.cp;
  c.parallel.dp_bucket_bytes = 64 << 10;
  if (l.llama) {
    c.model.kv_heads = 2;
    c.model.mlp_activation = "swiglu";
    c.model.intermediate_size = 176;
    c.model.norm = config::Normalization::kRmsNorm;
    c.model.bias = false;
    c.model.position = "rotary";
    c.model.rotary_pct = 1.0;
    c.model.tie_embeddings = false;
  }
  return c;
}

TEST(PlanMemory, PeakPerRankIsWithinTenPercentOfThePlan) {
  const uint64_t seed = cmpi::testing::test_seed() % 100000;
  // Full recomputation measures 9-11 % above the plan at this size (about
  // two logits-sized tensors: backward's transients at the head beside the
  // kept block inputs, not modelled yet; docs/planner.md): held to 15 % so
  // that it cannot drift further unseen.
  constexpr double kFull = 0.15;
  std::vector<Layout> layouts = {
      {"1 rank", 1, 1, 1, 0, "none"},
      {"1 rank", 1, 1, 1, 0, "selective"},
      {"1 rank", 1, 1, 1, 0, "full", kFull},
      {"dp2 ZeRO-1", 2, 1, 1, 1, "none"},
      {"dp2 ZeRO-1", 2, 1, 1, 1, "full", kFull},
      {"dp2 ZeRO-3", 2, 1, 1, 3, "none"},
      {"dp2 ZeRO-3", 2, 1, 1, 3, "selective"},
      {"dp2 ZeRO-2", 2, 1, 1, 2, "none"},
      {"dp2 ZeRO-2 shard", 2, 1, 1, 2, "none", 0.10, "shard"},
      {"dp2 ZeRO-3 shard", 2, 1, 1, 3, "none", 0.10, "shard"},
      {"tp2", 1, 2, 1, 0, "none"},
      {"tp2", 1, 2, 1, 0, "selective"},
      {"tp2 SP", 1, 2, 1, 0, "none", 0.10, "full_buffer", true},
      {"tp2 SP", 1, 2, 1, 0, "selective", 0.10, "full_buffer", true},
      {"tp2 SP", 1, 2, 1, 0, "full", kFull, "full_buffer", true},
      {"pp2", 1, 1, 2, 0, "none"},
      {"pp2", 1, 1, 2, 0, "selective"},
      {"pp2", 1, 1, 2, 0, "full", kFull},
      {"llama 1 rank", 1, 1, 1, 0, "none", 0.10, "full_buffer", false, true},
      {"llama 1 rank", 1, 1, 1, 0, "selective", 0.10, "full_buffer", false, true},
      {"llama tp2 SP", 1, 2, 1, 0, "none", 0.10, "full_buffer", true, true},
      {"llama dp2 ZeRO-3", 2, 1, 1, 3, "none", 0.10, "full_buffer", false, true},
      {"llama pp2", 1, 1, 2, 0, "full", kFull, "full_buffer", false, true},
      {"cp2", 1, 1, 1, 0, "none", 0.10, "full_buffer", false, false, 2},
      {"cp2", 1, 1, 1, 0, "full", kFull, "full_buffer", false, false, 2},
      {"llama cp2", 1, 1, 1, 0, "selective", 0.10, "full_buffer", false, true, 2},
  };
  if (world_rank() == 0)
    std::printf(
        "| layout | recompute | stage | measured peak | plan | plan / measured |\n"
        "|---|---|--:|--:|--:|--:|\n");
  for (const Layout& l : layouts) {
    const int ranks = l.dp * l.tp * l.pp * l.cp;
    if (ranks > world_size()) continue;
    const auto config = measured_config(seed, l);
    parallel::ParallelDims dims;
    dims.dp = l.dp;
    dims.tp = l.tp;
    dims.pp = l.pp;
    dims.cp = l.cp;
    dims.zero_stage = l.zero_stage;
    const int group_rank = world_rank() % ranks;
    const int stage = group_rank / (l.dp * l.tp * l.cp);  // tp fastest, then cp, dp, pp
    const auto plan = models::estimate_stage_memory(config, dims).at(size_t(stage));
    const double planned = double(plan.total() - plan.runtime_bytes - plan.scratch_bytes);
    int64_t peak = 0;
    {
      cmpi::testing::CountedAllocations counted;
      counted.start();
      cmpi::testing::train_in_groups_of(ranks, config, dims);
      peak = counted.peak_above_start();
    }
    // Per stage, the largest peak of its ranks (they differ by padding only).
    std::vector<int64_t> peaks(static_cast<size_t>(world_size()));
    MPI_Allgather(&peak, 1, MPI_INT64_T, peaks.data(), 1, MPI_INT64_T, MPI_COMM_WORLD);
    const std::string what = std::string(l.name) + ", recompute " + l.recompute + ", stage " +
                             std::to_string(stage) + ", seed " + std::to_string(seed);
    EXPECT_GT(peak, 0) << what << ": the counting allocator saw nothing";
    EXPECT_NEAR(planned / double(peak), 1.0, l.tolerance)
        << what << ": planned " << planned << " bytes, measured peak " << peak;
    if (world_rank() == 0)
      for (int s = 0; s < l.pp; ++s) {
        int64_t stage_peak = 0;
        for (int r = 0; r < ranks; ++r)
          if (r / (l.dp * l.tp * l.cp) == s) stage_peak = std::max(stage_peak, peaks[size_t(r)]);
        const auto stage_plan = models::estimate_stage_memory(config, dims).at(size_t(s));
        const double stage_planned =
            double(stage_plan.total() - stage_plan.runtime_bytes - stage_plan.scratch_bytes);
        std::printf("| %s | %s | %d | %.2f MB | %.2f MB | %.3f |\n", l.name, l.recompute, s,
                    double(stage_peak) / 1e6, stage_planned / 1e6,
                    stage_planned / double(stage_peak));
      }
  }
}

}  // namespace
}  // namespace cmpi::plan
