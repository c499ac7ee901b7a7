// The blocked causal attention (online softmax over key blocks) against the
// plain one: outputs and gradients within 1e-5 relative in float32 for block
// sizes that do and do not divide the sequence; with dropout, its backward
// is the derivative of its forward (central differences in float64, the
// generator reset before every forward) and the generator ends where forward
// left it; and it never allocates the [B, heads, T, T] tensors (counted).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <limits>
#include <string>

#include "models/attention.h"
#include "models/blocked_attention.h"
#include "tests/support/counting_allocator.h"
#include "tests/support/test_seed.h"

namespace cmpi::models {
namespace {

torch::Tensor plain_attention(const torch::Tensor& q, const torch::Tensor& k,
                              const torch::Tensor& v, const torch::Tensor& future) {
  const int64_t time = q.size(2);
  auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(double(q.size(3)));
  scores = scores.masked_fill(future.narrow(0, 0, time).narrow(1, 0, time),
                              -std::numeric_limits<float>::infinity());
  return torch::matmul(torch::softmax(scores, -1), v);
}

double relative_difference(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).abs().max().item<double>() / b.abs().max().item<double>();
}

TEST(BlockedAttention, MatchesThePlainAttentionWithinTolerance) {
  const uint64_t seed = cmpi::testing::test_seed();
  torch::manual_seed(int64_t(seed % 100000));
  const int64_t time = 37;
  const auto future = causal_future_mask(time);
  const auto q0 = torch::randn({2, 3, time, 8}), k0 = torch::randn({2, 3, time, 8}),
             v0 = torch::randn({2, 3, time, 8}), d_out = torch::randn({2, 3, time, 8});
  auto run = [&](int64_t block) {
    auto q = q0.clone().requires_grad_(), k = k0.clone().requires_grad_(),
         v = v0.clone().requires_grad_();
    auto out = block == 0 ? plain_attention(q, k, v, future)
                          : blocked_causal_attention(q, k, v, future, block, 0.0, true,
                                                     at::make_generator<at::CPUGeneratorImpl>(1));
    out.backward(d_out);
    return std::vector<torch::Tensor>{out.detach(), q.grad(), k.grad(), v.grad()};
  };
  const auto plain = run(0);
  for (int64_t block : {1, 5, 16, 36, 64}) {
    const auto blocked = run(block);
    const char* names[] = {"output", "dq", "dk", "dv"};
    for (size_t i = 0; i < plain.size(); ++i)
      EXPECT_LE(relative_difference(blocked[i], plain[i]), 1e-5)
          << names[i] << ", block " << block << ", seed " << seed;
  }
}

TEST(BlockedAttention, DropoutBackwardIsTheDerivativeOfItsForward) {
  const uint64_t seed = cmpi::testing::test_seed() + 1;
  torch::manual_seed(int64_t(seed % 100000));
  const int64_t time = 11;
  const auto future = causal_future_mask(time);
  const auto options = torch::dtype(torch::kFloat64);
  const auto q = torch::randn({1, 2, time, 4}, options), k = torch::randn({1, 2, time, 4}, options),
             v = torch::randn({1, 2, time, 4}, options),
             weights = torch::randn({1, 2, time, 4}, options);
  auto generator = at::make_generator<at::CPUGeneratorImpl>(seed);
  const auto start = [&] {
    std::lock_guard<std::mutex> lock(generator.mutex());
    return generator.get_state();
  }();
  auto objective = [&](const torch::Tensor& qq, const torch::Tensor& kk, const torch::Tensor& vv) {
    {
      std::lock_guard<std::mutex> lock(generator.mutex());
      generator.set_state(start);
    }
    return (blocked_causal_attention(qq, kk, vv, future, 3, 0.3, true, generator) * weights).sum();
  };
  auto qg = q.clone().requires_grad_(), kg = k.clone().requires_grad_(),
       vg = v.clone().requires_grad_();
  auto value = objective(qg, kg, vg);
  const auto after_forward = [&] {
    std::lock_guard<std::mutex> lock(generator.mutex());
    return generator.get_state();
  }();
  value.backward();
  {
    std::lock_guard<std::mutex> lock(generator.mutex());
    EXPECT_TRUE(torch::equal(generator.get_state(), after_forward))
        << "backward must put the generator back where forward left it";
  }
  torch::NoGradGuard no_grad;
  const double eps = 1e-6;
  for (int direction = 0; direction < 3; ++direction) {
    const auto dq = torch::randn_like(q), dk = torch::randn_like(k), dv = torch::randn_like(v);
    const double numeric = (objective(q + eps * dq, k + eps * dk, v + eps * dv) -
                            objective(q - eps * dq, k - eps * dk, v - eps * dv))
                               .item<double>() /
                           (2 * eps);
    const double analytic =
        ((qg.grad() * dq).sum() + (kg.grad() * dk).sum() + (vg.grad() * dv).sum()).item<double>();
    EXPECT_NEAR(analytic, numeric, 1e-6 * std::max(1.0, std::abs(numeric)))
        << "direction " << direction << ", seed " << seed;
  }
}

TEST(BlockedAttention, NeverAllocatesTheFullScores) {
  const uint64_t seed = cmpi::testing::test_seed() + 2;
  torch::manual_seed(int64_t(seed % 100000));
  const int64_t batch = 2, heads = 4, time = 256, dim = 16, block = 32;
  const auto future = causal_future_mask(time);
  const int64_t scores_bytes = batch * heads * time * time * int64_t(sizeof(float));
  cmpi::testing::CountedAllocations counted;
  auto peak_of = [&](int64_t use_block) {
    auto q = torch::randn({batch, heads, time, dim}).requires_grad_(),
         k = torch::randn({batch, heads, time, dim}).requires_grad_(),
         v = torch::randn({batch, heads, time, dim}).requires_grad_();
    const auto d_out = torch::randn({batch, heads, time, dim});
    counted.start();
    auto out = use_block == 0
                   ? plain_attention(q, k, v, future)
                   : blocked_causal_attention(q, k, v, future, use_block, 0.1, true,
                                              at::make_generator<at::CPUGeneratorImpl>(seed));
    out.backward(d_out);
    return counted.peak_above_start();
  };
  const int64_t plain = peak_of(0), blocked = peak_of(block);
  EXPECT_GE(plain, 2 * scores_bytes) << "the plain path holds the scores and probabilities";
  // Its peak is q, k, v-sized tensors (output, running sums, gradients)
  // and a few [B, h, T, block] ones: less than one [B, h, T, T] tensor.
  EXPECT_LT(blocked, scores_bytes)
      << "blocked peak " << blocked << " bytes against [B, h, T, T] of " << scores_bytes
      << ", plain peak " << plain << ", seed " << seed;
  EXPECT_LT(3 * blocked, plain) << "blocked " << blocked << ", plain " << plain << ", seed "
                                << seed;
}

}  // namespace
}  // namespace cmpi::models
