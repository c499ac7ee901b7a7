// The GPT's architecture pieces alone (no MPI): the rotary embedding's
// convention and its defining property, the published init formulas, and
// which unit (embedding, block, head) a parameter's name puts it in.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "models/gpt_options.h"
#include "models/gpt_param_unit.h"
#include "models/rotary_embedding.h"
#include "tests/support/test_seed.h"

namespace cmpi::models {
namespace {

// x = (1, 0) at position p turns to (cos p, sin p) with θ_0 = 1: GPT-NeoX's
// direction (x'_i = x_i cos − x_{i+d/2} sin).
TEST(RotaryEmbedding, TurnsThePairCounterclockwiseByPositionTimesTheta) {
  RotaryEmbedding rotary(/*head_dim=*/2, /*dims=*/2, /*base=*/10000.0, /*max_positions=*/5);
  auto x = torch::zeros({5, 2});
  x.select(1, 0).fill_(1.0);
  const auto turned = rotary.apply(x);
  for (int64_t p = 0; p < 5; ++p) {
    EXPECT_NEAR(turned[p][0].item<float>(), std::cos(double(p)), 1e-6) << "position " << p;
    EXPECT_NEAR(turned[p][1].item<float>(), std::sin(double(p)), 1e-6) << "position " << p;
  }
}

// Dimension i pairs with i + dims/2 (not 2i with 2i+1); the dimensions past
// `dims` pass unchanged; each pair keeps its length.
TEST(RotaryEmbedding, RotatesHalvesOfTheFirstDimsAndPassesTheRest) {
  const uint64_t seed = cmpi::testing::test_seed();
  torch::manual_seed(seed);
  const int64_t head_dim = 16, dims = 4, time = 9;
  RotaryEmbedding rotary(head_dim, dims, 10000.0, time);
  const auto x = torch::randn({2, 3, time, head_dim});
  const auto y = rotary.apply(x);
  EXPECT_TRUE(
      torch::equal(y.narrow(-1, dims, head_dim - dims), x.narrow(-1, dims, head_dim - dims)))
      << "seed " << seed;
  EXPECT_TRUE(torch::equal(y.select(-2, 0), x.select(-2, 0))) << "position 0 turns by 0";
  for (int64_t i = 0; i < dims / 2; ++i) {
    const auto length = [&](const torch::Tensor& t) {
      return (t.select(-1, i).square() + t.select(-1, i + dims / 2).square()).sqrt();
    };
    EXPECT_TRUE(torch::allclose(length(y), length(x), 1e-5, 1e-6))
        << "pair " << i << " seed " << seed;
  }
}

// RoFormer's point: q'·k' depends on the positions m, n only through m − n.
TEST(RotaryEmbedding, ScoresDependOnlyOnTheRelativePosition) {
  const uint64_t seed = cmpi::testing::test_seed();
  torch::manual_seed(seed);
  const int64_t head_dim = 8, time = 12;
  RotaryEmbedding rotary(head_dim, head_dim, 10000.0, time);
  const auto q = rotary.apply(torch::randn({head_dim}).expand({time, head_dim}));
  const auto k = rotary.apply(torch::randn({head_dim}).expand({time, head_dim}));
  const auto scores = torch::matmul(q, k.t());  // [m, n]
  for (int64_t shift = 1; shift < 4; ++shift)
    EXPECT_TRUE(
        torch::allclose(scores.narrow(0, shift, time - shift).narrow(1, shift, time - shift),
                        scores.narrow(0, 0, time - shift).narrow(1, 0, time - shift), 1e-4, 1e-5))
        << "shift " << shift << " seed " << seed;
}

TEST(RotaryEmbedding, RefusesAnOddOrEmptyRotation) {
  EXPECT_THROW(RotaryEmbedding(16, 3, 10000.0, 8), std::invalid_argument);
  EXPECT_THROW(RotaryEmbedding(16, 0, 10000.0, 8), std::invalid_argument);
  EXPECT_THROW(RotaryEmbedding(16, 18, 10000.0, 8), std::invalid_argument);
}

// GPT-NeoX-20B (hidden 6144, 44 layers), its paper's §2.3.1:
// small_init √(2/(5·6144)) = 0.0080687, wang_init 2/(44·√6144) = 0.00057990.
TEST(GptInit, NeoxSchemeIsSmallInitAndWangInit) {
  GptOptions o;
  o.hidden = 6144;
  o.layers = 44;
  o.init = InitScheme::kNeox;
  EXPECT_NEAR(o.input_init_std(), 0.0080687, 1e-7);
  EXPECT_NEAR(o.output_init_std(), 0.00057990, 1e-8);
  o.init = InitScheme::kGpt2;  // GPT-2: init_std, and init_std / √(2·layers)
  EXPECT_DOUBLE_EQ(o.input_init_std(), 0.02);
  EXPECT_NEAR(o.output_init_std(), 0.02 / std::sqrt(88.0), 1e-15);
}

TEST(GptOptions, RotaryDimsRoundDownAndDropThePositionTable) {
  GptOptions o;  // hidden 64, 4 heads: head_dim 16
  const int64_t learned = o.parameter_count();
  EXPECT_EQ(o.rotary_dims(), 0);
  o.position = PositionEncoding::kRotary;
  o.rotary_pct = 0.3;  // 4.8 -> 4
  EXPECT_EQ(o.rotary_dims(), 4);
  EXPECT_EQ(o.parameter_count(), learned - o.seq_len * o.hidden);
}

// The unit decides ZeRO-3's per-layer gathers and DiLoCo's fragments: a
// block's layer must be read whole ("block12", not "block1"), the head's
// parameters go together, and a malformed block name is refused by name.
TEST(GptParamUnit, ReadsEmbeddingBlockAndHeadFromTheGlobalName) {
  EXPECT_EQ(gpt_param_unit("token_embedding.weight").kind, GptParamUnit::Kind::kEmbedding);
  EXPECT_EQ(gpt_param_unit("position_embedding.weight").name(), "embedding");
  const GptParamUnit block = gpt_param_unit("block12.attention.qkv.weight");
  EXPECT_EQ(block.kind, GptParamUnit::Kind::kBlock);
  EXPECT_EQ(block.layer, 12);
  EXPECT_EQ(block.name(), "block12");
  EXPECT_EQ(gpt_param_unit("block0.ln_1.bias").layer, 0);
  EXPECT_EQ(gpt_param_unit("final_norm.weight").name(), "head");
  EXPECT_EQ(gpt_param_unit("output_head.weight").kind, GptParamUnit::Kind::kHead);
  for (const std::string bad : {"block.ln_1.weight", "blockx.fc_in.weight", "block-1.ln_1.bias"}) {
    try {
      gpt_param_unit(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace cmpi::models
