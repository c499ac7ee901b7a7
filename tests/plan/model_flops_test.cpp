// The model FLOP count (plan/model_flops.h) that both the planner's compute
// model and the trainer's MFU use: its value worked out by hand for a GPT-2
// and a Llama-shaped block (GQA, SwiGLU, untied head), its agreement with
// what plan_step charges per stage (forward, and recomputation inside
// backward) under tp and pp, and the peak table (plan/peak_flops.h).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "config/config.h"
#include "parallel/mesh/parallel_dims.h"
#include "plan/model_flops.h"
#include "plan/peak_flops.h"
#include "plan/step_plan.h"

namespace cmpi::plan {
namespace {

config::Config gpt2_small() {
  config::Config c;
  c.model.vocab_size = 256;
  c.model.seq_len = 64;
  c.model.layers = 2;
  c.model.hidden = 64;
  c.model.heads = 4;
  c.model.mlp_ratio = 4;
  c.training.micro_batch = 4;
  c.training.global_batch = 16;
  c.compression.preset = "none";
  return c;
}

config::Config llama_small() {
  config::Config c = gpt2_small();
  c.model.layers = 4;
  c.model.kv_heads = 2;
  c.model.intermediate_size = 96;
  c.model.mlp_activation = "swiglu";
  c.model.tie_embeddings = false;
  c.model.position = "rotary";
  c.model.bias = false;
  return c;
}

parallel::ParallelDims layout(int dp, int tp, int pp) {
  parallel::ParallelDims d;
  d.dp = dp;
  d.tp = tp;
  d.pp = pp;
  return d;
}

TEST(ModelFlops, Gpt2ByHand) {
  // Per layer: q, k, v 3 x 64 x 64 = 12288, output 4096, MLP 2 x 256 x 64 =
  // 32768: 49152 weights; two layers 98304; head 64 x 256 = 16384. Forward
  // 2 x (98304 + 16384) + attention 2 layers x 4 x 64 x 64 = 262144.
  const TokenFlops f = model_flops_per_token(gpt2_small(), layout(1, 1, 1));
  EXPECT_DOUBLE_EQ(f.forward, 262144);
  EXPECT_DOUBLE_EQ(f.recompute, 0);
  EXPECT_DOUBLE_EQ(f.model_training(), 3 * 262144);
}

TEST(ModelFlops, LlamaByHandCountsGroupedKeysTheGateAndTheUntiedHead) {
  // Head width 16: q 4 heads + k, v 2 heads each = 8 x 16 = 128 rows x 64 =
  // 8192, output 4096, SwiGLU 3 x 96 x 64 = 18432: 30720 weights a layer;
  // 4 layers 122880; untied head 16384 (the embedding table is no matmul).
  // Forward 2 x (122880 + 16384) + 4 x 4 x 64 x 64 = 344064.
  const TokenFlops f = model_flops_per_token(llama_small(), layout(1, 1, 1));
  EXPECT_DOUBLE_EQ(f.forward, 344064);
}

TEST(ModelFlops, RecomputationIsHardwareWorkOnly) {
  config::Config c = llama_small();
  c.training.recompute = "selective";  // QK^T and AV again: 4 x 4 x 64 x 64
  TokenFlops f = model_flops_per_token(c, layout(1, 1, 1));
  EXPECT_DOUBLE_EQ(f.recompute, 65536);
  EXPECT_DOUBLE_EQ(f.model_training(), 3 * 344064);
  EXPECT_DOUBLE_EQ(f.hardware_training(), 3 * 344064 + 65536);
  // Full, first layer of each of 2 stages: 2 blocks' forward again
  // (2 x 30720 + 4 x 64 x 64 = 77824 each).
  c.training.recompute = "full";
  c.training.recompute_layers = 1;
  f = model_flops_per_token(c, layout(1, 1, 2));
  EXPECT_DOUBLE_EQ(f.recompute, 2 * 77824);
}

// What plan_step charges a stage's rank per micro-batch, at 1 FLOP/s and
// without time-sharing, is that rank's FLOPs: summed over stages and times
// tp it must be the model's count.
void expect_plan_agrees(config::Config c, const parallel::ParallelDims& d) {
  PlanOptions o;
  o.world_size = d.dp * d.tp * d.pp;
  o.flops_per_second = 1;
  CodecCostTable codecs;
  const StepPlan plan = plan_step(c, d, o, codecs);
  const double tokens = double(c.training.micro_batch * c.model.seq_len);
  double forward = 0, recompute = 0;
  for (const StagePlan& stage : plan.stages) {
    forward += stage.forward_seconds * d.tp / tokens;
    recompute += (stage.backward_seconds - 2 * stage.forward_seconds) * d.tp / tokens;
  }
  const TokenFlops f = model_flops_per_token(c, d);
  EXPECT_NEAR(forward, f.forward, 1e-6 * f.forward) << d.to_string();
  EXPECT_NEAR(recompute, f.recompute, 1e-6 * f.forward) << d.to_string();
}

TEST(ModelFlops, ThePlannerChargesTheSameFlops) {
  for (const auto& d : {layout(1, 1, 1), layout(1, 2, 2), layout(2, 2, 1)}) {
    expect_plan_agrees(gpt2_small(), d);
    config::Config c = llama_small();
    expect_plan_agrees(c, d);
    c.training.recompute = "full";
    expect_plan_agrees(c, d);
    c.training.recompute = "selective";
    expect_plan_agrees(c, d);
  }
}

TEST(PeakFlops, DatasheetRatesPerPrecision) {
  EXPECT_DOUBLE_EQ(resolve_peak_flops("a100", config::Precision::kBf16).flops_per_second, 312e12);
  EXPECT_DOUBLE_EQ(resolve_peak_flops("A100", config::Precision::kFp32).flops_per_second, 19.5e12);
  EXPECT_DOUBLE_EQ(resolve_peak_flops("h100", config::Precision::kBf16).flops_per_second, 989.4e12);
  EXPECT_DOUBLE_EQ(resolve_peak_flops("h200", config::Precision::kFp16).flops_per_second, 989.4e12);
  EXPECT_DOUBLE_EQ(resolve_peak_flops("v100", config::Precision::kFp16).flops_per_second, 125e12);
  EXPECT_EQ(resolve_peak_flops("a100", config::Precision::kBf16).source, "a100 bf16 datasheet");
}

TEST(PeakFlops, AutoANumberAndWhatIsRefused) {
  EXPECT_DOUBLE_EQ(resolve_peak_flops("auto", config::Precision::kFp32).flops_per_second, 0);
  EXPECT_DOUBLE_EQ(resolve_peak_flops("2.5e12", config::Precision::kFp32).flops_per_second, 2.5e12);
  try {
    resolve_peak_flops("v100", config::Precision::kBf16);
    FAIL() << "a V100 has no bf16 rate";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("v100 has no bf16 rate"), std::string::npos) << e.what();
  }
  try {
    resolve_peak_flops("a10", config::Precision::kFp32);
    FAIL() << "an unknown device was taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown device 'a10'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(resolve_peak_flops("-1", config::Precision::kFp32), std::invalid_argument);
}

}  // namespace
}  // namespace cmpi::plan
