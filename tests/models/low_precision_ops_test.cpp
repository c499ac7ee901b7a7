// parallel/low_precision_ops.h and the 16-bit path of leaf_saving_linear:
// forward and input/weight gradients of each op on bf16 and half inputs
// equal LibTorch's float32 autograd on the same (16-bit) values, up to the
// one rounding of each result to 16 bits (relative 2^-7 for bf16, 2^-10 for
// half, checked at twice that), and the results have the input's dtype
// (weight gradients float32). Random data from the printed seed.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <string>

#include "parallel/leaf_saving_linear.h"
#include "parallel/low_precision_ops.h"
#include "tests/support/test_seed.h"

namespace cmpi::parallel {
namespace {

double ulp_of(torch::ScalarType type) {
  return type == torch::kBFloat16 ? 1.0 / 128 : 1.0 / 1024;
}

// max |a - b| / max |b|.
double relative_error(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kFloat) - b).abs().max().item<double>() /
         b.abs().max().clamp_min(1e-30).item<double>();
}

class LowPrecisionOps : public ::testing::TestWithParam<torch::ScalarType> {
 protected:
  void SetUp() override {
    seed_ = cmpi::testing::test_seed();
    torch::manual_seed(seed_);
  }
  // A 16-bit leaf and its float32 twin holding the same values.
  std::pair<torch::Tensor, torch::Tensor> pair(std::vector<int64_t> shape) {
    auto low = torch::randn(shape).to(GetParam()).requires_grad_(true);
    auto wide = low.detach().to(torch::kFloat).requires_grad_(true);
    return {low, wide};
  }
  void expect_close(const torch::Tensor& got, const torch::Tensor& want, const std::string& what) {
    EXPECT_LE(relative_error(got, want), 2 * ulp_of(GetParam()))
        << what << " (seed " << seed_ << ")";
  }
  uint64_t seed_ = 0;
};

TEST_P(LowPrecisionOps, MatchFloat32AutogradOnTheSameValues) {
  const auto type = GetParam();
  auto [a, a32] = pair({2, 3, 5, 8});
  auto [b, b32] = pair({2, 3, 8, 4});
  auto y = parallel::mixed_matmul(a, b);
  auto y32 = torch::matmul(a32, b32);
  EXPECT_EQ(y.scalar_type(), type);
  expect_close(y, y32, "mixed_matmul");
  auto g = torch::randn(y.sizes());
  y.backward(g.to(type));
  y32.backward(g.to(type).to(torch::kFloat));
  expect_close(a.grad(), a32.grad(), "mixed_matmul da");
  expect_close(b.grad(), b32.grad(), "mixed_matmul db");

  auto [s, s32] = pair({2, 3, 6, 6});
  const auto future = torch::ones({6, 6}, torch::dtype(torch::kBool)).triu(1);
  auto p = parallel::scaled_causal_softmax(s, 2.0, future);
  auto p32 = torch::softmax((s32 / 2.0).masked_fill(future, -INFINITY), -1);
  EXPECT_EQ(p.scalar_type(), type);
  expect_close(p, p32, "softmax");
  g = torch::randn(p.sizes()).to(type);
  p.backward(g);
  p32.backward(g.to(torch::kFloat));
  expect_close(s.grad(), s32.grad(), "softmax grad");

  for (const char* approximate : {"none", "tanh"}) {
    auto [x, x32] = pair({4, 16});
    auto y16 = parallel::gelu(x, approximate);
    auto y32g = torch::gelu(x32, approximate);
    expect_close(y16, y32g, std::string("gelu ") + approximate);
    g = torch::randn(y16.sizes()).to(type);
    y16.backward(g);
    y32g.backward(g.to(torch::kFloat));
    expect_close(x.grad(), x32.grad(), std::string("gelu grad ") + approximate);
  }

  auto [x, x32] = pair({4, 5, 16});
  auto weight = (torch::randn({16}) + 1).requires_grad_(true);
  auto bias = torch::randn({16}).requires_grad_(true);
  auto weight32 = weight.detach().clone().requires_grad_(true);
  auto bias32 = bias.detach().clone().requires_grad_(true);
  auto n = parallel::layer_norm(x, weight, bias, 1e-5);
  auto n32 = torch::layer_norm(x32, {16}, weight32, bias32, 1e-5);
  expect_close(n, n32, "layer_norm");
  g = torch::randn(n.sizes()).to(type);
  n.backward(g);
  n32.backward(g.to(torch::kFloat));
  expect_close(x.grad(), x32.grad(), "layer_norm dx");
  EXPECT_EQ(weight.grad().scalar_type(), torch::kFloat);
  expect_close(weight.grad(), weight32.grad(), "layer_norm dweight");
  expect_close(bias.grad(), bias32.grad(), "layer_norm dbias");

  // A float32 master weight rounded on use; its gradient float32.
  auto [h, h32] = pair({3, 7, 16});
  auto master = torch::randn({8, 16}).requires_grad_(true);
  auto master32 = master.detach().to(type).to(torch::kFloat).requires_grad_(true);
  auto lin = leaf_saving_linear(h, master);
  auto lin32 = torch::nn::functional::linear(h32, master32);
  EXPECT_EQ(lin.scalar_type(), type);
  expect_close(lin, lin32, "linear");
  g = torch::randn(lin.sizes()).to(type);
  lin.backward(g);
  lin32.backward(g.to(torch::kFloat));
  expect_close(h.grad(), h32.grad(), "linear dx");
  EXPECT_EQ(master.grad().scalar_type(), torch::kFloat);
  EXPECT_LE(relative_error(master.grad(), master32.grad()), 1e-6)
      << "the weight gradient is not rounded (seed " << seed_ << ")";
}

// The float32 path of scaled_causal_softmax (its own autograd node, masking
// and scaling in place) gives exactly the plain expression's values and input
// gradient: float32 training stays bit for bit what it was.
TEST(LowPrecisionOpsFloat32, CausalSoftmaxIsThePlainExpressionBitForBit) {
  const uint64_t seed = cmpi::testing::test_seed();
  torch::manual_seed(seed);
  const int64_t time = 24;
  // The model's mask is built for seq_len and narrowed per forward.
  const auto future =
      torch::ones({32, 32}, torch::kBool).triu(1).narrow(0, 0, time).narrow(1, 0, time);
  auto scores = (torch::randn({2, 3, time, time}) * 4).requires_grad_(true);
  auto plain_scores = scores.detach().clone().requires_grad_(true);
  const double divisor = std::sqrt(40.0);
  auto y = parallel::scaled_causal_softmax(scores, divisor, future);
  auto plain = torch::softmax((plain_scores / divisor).masked_fill(future, -INFINITY), -1);
  EXPECT_TRUE(torch::equal(y, plain)) << "forward (seed " << seed << ")";
  // A non-contiguous incoming gradient, as a transposed product gives.
  const auto g = torch::randn({2, 3, time, time}).transpose(-2, -1);
  y.backward(g);
  plain.backward(g);
  EXPECT_TRUE(torch::equal(scores.grad(), plain_scores.grad())) << "backward (seed " << seed << ")";
  EXPECT_TRUE(torch::equal(scores.grad().masked_select(future.expand({2, 3, time, time})),
                           torch::zeros({2 * 3 * time * (time - 1) / 2})))
      << "masked positions get no gradient (seed " << seed << ")";
}

INSTANTIATE_TEST_SUITE_P(SixteenBit, LowPrecisionOps,
                         ::testing::Values(torch::kBFloat16, torch::kHalf));

}  // namespace
}  // namespace cmpi::parallel
