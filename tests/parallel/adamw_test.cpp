// parallel/zero/adamw.h: adamw_update (a SIMD loop) gives, for every length
// (SIMD body and scalar tail alike), exactly the values of the update written
// element by element here in plain scalar code, with and without weight
// decay, over several steps. Random data from the printed seed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "parallel/zero/adamw.h"
#include "tests/support/test_seed.h"

namespace cmpi::parallel {
namespace {

// The documented update, one element at a time.
void scalar_reference(const AdamWStep& s, bool decay, float* param, const float* grad,
                      float* exp_avg, float* exp_avg_sq, size_t n) {
  const float correction = float(s.bias_correction2_sqrt);
  for (size_t i = 0; i < n; ++i) {
    const float g = grad[i];
    const float m = exp_avg[i] * s.beta1 + s.one_minus_beta1 * g;
    const float v = exp_avg_sq[i] * s.beta2 + s.one_minus_beta2 * (g * g);
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    const float denom = std::sqrt(v) / correction + s.eps;
    param[i] = param[i] * (decay ? s.decay_factor : 1.0f) - s.step_size * (m / denom);
  }
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(AdamW, UpdateEqualsTheScalarFormulaBitForBitAtEveryLength) {
  const uint64_t seed = cmpi::testing::test_seed();
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  AdamWOptions options;
  options.beta2 = 0.95;
  options.weight_decay = 0.1;
  for (size_t n = 1; n <= 37; ++n) {
    for (const bool decay : {false, true}) {
      std::vector<float> param(n), grad(n), m(n, 0.0f), v(n, 0.0f);
      for (auto& x : param) x = normal(rng);
      auto ref_param = param, ref_m = m, ref_v = v;
      for (int64_t step = 1; step <= 3; ++step) {
        for (auto& g : grad) g = normal(rng) * (step == 2 ? 1e-20f : 1.0f);  // tiny v too
        const AdamWStep s(options, 3e-3, step);
        adamw_update(s, decay, param.data(), grad.data(), m.data(), v.data(), n);
        scalar_reference(s, decay, ref_param.data(), grad.data(), ref_m.data(), ref_v.data(), n);
        ASSERT_TRUE(same_bits(param, ref_param) && same_bits(m, ref_m) && same_bits(v, ref_v))
            << "n " << n << ", decay " << decay << ", step " << step << " (seed " << seed << ")";
      }
    }
  }
}

}  // namespace
}  // namespace cmpi::parallel
