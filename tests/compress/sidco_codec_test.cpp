// sidco: the tail fits' quantiles against closed forms, that exactly the
// entries at or above the estimated threshold arrive (bit for bit, in the
// shared sparse body), the achieved density within 20 % of the target on
// Laplace, normal and captured gradient data, zeros and non-finite values,
// parameters, and convergence under error feedback.
#include "compress/sidco_codec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "compress/codec_registry.h"
#include "compress/error_feedback.h"
#include "compress/sparse_body.h"
#include "io/float32_file.h"
#include "tests/compress/codec_test_util.h"
#include "tests/support/test_seed.h"

namespace cmpi::compress {
namespace {

using test_util::decode_all;
using test_util::float_bits;

std::unique_ptr<SidcoCodec> sidco(double density, int stages, const std::string& fit,
                                  const std::string& sample = "65536") {
  return std::make_unique<SidcoCodec>(CodecSpec("sidco", {{"density", std::to_string(density)},
                                                          {"stages", std::to_string(stages)},
                                                          {"fit", fit},
                                                          {"sample", sample}}));
}

std::vector<float> laplace(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<float> magnitude(1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = (rng() & 1 ? 1.f : -1.f) * magnitude(rng);
  return v;
}

std::vector<float> captured_gradients() {
  return io::read_float32_file(std::string(CMPI_SOURCE_DIR) + "/bench/data/gradients.f32");
}

TEST(TailFit, QuantilesMatchClosedForms) {
  // Exponential with mean 2: P(Y > t) = exp(-t/2).
  EXPECT_NEAR(tail_quantile(TailFit::kExponential, 2.0, 4.0, 0.01), 2.0 * std::log(100.0), 1e-12);
  // Generalized Pareto xi = 0.25, beta = 1: mean 1/(1-xi), var 1/((1-xi)^2 (1-2xi)).
  const double xi = 0.25, mean = 1 / (1 - xi), var = 1 / ((1 - xi) * (1 - xi) * (1 - 2 * xi));
  EXPECT_NEAR(tail_quantile(TailFit::kGeneralizedPareto, mean, var, 0.01),
              (std::pow(0.01, -xi) - 1) / xi, 1e-9);
  // Variance mean^2 makes both shape-aware fits exponential.
  EXPECT_NEAR(tail_quantile(TailFit::kGeneralizedPareto, 3.0, 9.0, 1e-3), 3.0 * std::log(1e3),
              1e-9);
  EXPECT_NEAR(tail_quantile(TailFit::kGamma, 3.0, 9.0, 1e-3), 3.0 * std::log(1e3), 1e-6);
  // Gamma shape 1/2 is chi-square(1)/2 scaled: Q(1/2, x) = erfc(sqrt(x)).
  for (double x : {0.01, 0.5, 2.0, 9.0})
    EXPECT_NEAR(regularized_upper_gamma(0.5, x), std::erfc(std::sqrt(x)), 1e-12) << x;
  EXPECT_NEAR(regularized_upper_gamma(3.0, 2.0), std::exp(-2.0) * (1 + 2.0 + 2.0), 1e-12);
  const double t = tail_quantile(TailFit::kGamma, 0.5 * 2.0, 0.5 * 4.0, 0.05);  // k 1/2, theta 2
  EXPECT_NEAR(std::erfc(std::sqrt(t / 2.0)), 0.05, 1e-9);
  // Degenerate moments: every sample equal.
  EXPECT_EQ(tail_quantile(TailFit::kGamma, 1.0, 0.0, 0.1), 0.0);
  EXPECT_EQ(tail_quantile(TailFit::kExponential, 0.0, 0.0, 0.1), 0.0);
}

TEST(Sidco, KeepsExactlyTheEntriesAtOrAboveItsThresholdBitExact) {
  const uint64_t seed = cmpi::testing::test_seed();
  for (size_t n : {1, 7, 1000, 200000}) {
    auto codec = sidco(0.05, 2, "gpareto");
    const auto x = laplace(n, seed + n);
    const auto payload = codec->encode(x.data(), n);
    const auto out = decode_all(*codec, payload, n);
    const float t = codec->last_threshold();
    size_t kept = 0;
    for (size_t i = 0; i < n; ++i) {
      if (std::fabs(x[i]) >= t && x[i] != 0) {
        ASSERT_EQ(float_bits(out[i]), float_bits(x[i])) << "seed " << seed << " n " << n;
        ++kept;
      } else {
        ASSERT_EQ(float_bits(out[i]), 0u) << "seed " << seed << " n " << n << " i " << i;
      }
    }
    EXPECT_DOUBLE_EQ(codec->last_density(), double(kept) / double(n));
    const auto body = test_util::body_of(payload);
    EXPECT_EQ(sparse_body_info(body.data(), body.size()).kept, kept);
  }
}

void expect_density_within_20_percent(const std::vector<float>& x, const std::string& what,
                                      const std::vector<std::string>& fits,
                                      const std::vector<double>& densities) {
  for (const std::string& fit : fits) {
    for (double density : densities) {
      for (int stages : {1, 2, 3}) {
        if (fit != "exponential" && stages == 1) continue;  // stage 1 is always exponential
        auto codec = sidco(density, stages, fit);
        codec->encode(x.data(), x.size());
        EXPECT_NEAR(codec->last_density() / density, 1.0, 0.2)
            << what << " fit " << fit << " stages " << stages << " target " << density
            << " achieved " << codec->last_density();
      }
    }
  }
}

TEST(Sidco, AchievedDensityWithin20PercentOnLaplaceData) {
  const uint64_t seed = cmpi::testing::test_seed();
  expect_density_within_20_percent(laplace(size_t(1) << 20, seed),
                                   "laplace seed " + std::to_string(seed),
                                   {"exponential", "gpareto", "gamma"}, {0.001, 0.01, 0.1});
}

TEST(Sidco, AchievedDensityWithin20PercentOnNormalData) {
  // |N(0,1)| has a lighter tail than exponential: one exponential stage
  // overshoots the threshold, so only the refined fits are held to 20 %.
  // gamma lands at 1.18-1.19x the target at density 0.001 (seeds 1-3), too
  // close to the bound to test there.
  const uint64_t seed = cmpi::testing::test_seed();
  const auto x = test_util::gaussian(size_t(1) << 20, seed);
  const std::string what = "normal seed " + std::to_string(seed);
  expect_density_within_20_percent(x, what, {"gpareto"}, {0.001, 0.01, 0.1});
  expect_density_within_20_percent(x, what, {"gamma"}, {0.01, 0.1});
}

TEST(Sidco, AchievedDensityWithin20PercentOnCapturedGradients) {
  // The default refinement, gpareto. (gamma reaches 0.77x the target at
  // density 0.01 on this data: the excesses of a mixture of layers are not
  // gamma-shaped; see docs/benchmarks.md.)
  expect_density_within_20_percent(captured_gradients(), "bench/data/gradients.f32", {"gpareto"},
                                   {0.001, 0.01, 0.1});
}

TEST(Sidco, ZerosNeverKeptNonFiniteAlwaysKept) {
  auto codec = sidco(0.1, 2, "gpareto");
  std::vector<float> zeros(1000, 0.f);
  auto out = decode_all(*codec, codec->encode(zeros.data(), zeros.size()), zeros.size());
  EXPECT_EQ(codec->last_density(), 0.0);

  auto x = laplace(5000, cmpi::testing::test_seed());
  x[10] = std::numeric_limits<float>::quiet_NaN();
  x[20] = -std::numeric_limits<float>::infinity();
  x[30] = 0.f;
  out = decode_all(*codec, codec->encode(x.data(), x.size()), x.size());
  EXPECT_TRUE(std::isnan(out[10]));
  EXPECT_EQ(out[20], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isfinite(codec->last_threshold()));
  EXPECT_NEAR(codec->last_density() / 0.1, 1.0, 0.2);

  auto empty = codec->encode(nullptr, 0);
  EXPECT_EQ(codec->last_density(), 0.0);
  decode_all(*codec, empty, 0);
}

TEST(Sidco, BadParametersAreNamed) {
  auto message = [](const CodecSpec& spec) {
    try {
      make_codec(spec);
    } catch (const CodecError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(CodecSpec("sidco", {{"density", "0"}})).find("'density'"), std::string::npos);
  EXPECT_NE(message(CodecSpec("sidco", {{"density", "1.5"}})).find("'density'"), std::string::npos);
  EXPECT_NE(message(CodecSpec("sidco", {{"stages", "0"}})).find("'stages'"), std::string::npos);
  EXPECT_NE(message(CodecSpec("sidco", {{"stages", "9"}})).find("'stages'"), std::string::npos);
  EXPECT_NE(message(CodecSpec("sidco", {{"fit", "cauchy"}})).find("'fit'"), std::string::npos);
  EXPECT_NE(message(CodecSpec("sidco", {{"sample", "10"}})).find("'sample'"), std::string::npos);
  EXPECT_NE(message(CodecSpec("sidco", {{"ratio", "0.1"}})).find("ratio"), std::string::npos);
  EXPECT_EQ(message(CodecSpec("sidco", {{"fit", "gamma"}, {"sample", "0"}})), "no error");
}

TEST(Sidco, ErrorFeedbackRunningSumTracksInputs) {
  // With feedback, the sum of what was sent follows the sum of the inputs up
  // to the residual; without it the threshold's bias accumulates.
  const uint64_t seed = cmpi::testing::test_seed();
  const size_t n = 4000;
  const int steps = 200;
  ErrorFeedback feedback(make_codec(CodecSpec("sidco", {{"density", "0.05"}})));
  auto plain = make_codec(CodecSpec("sidco", {{"density", "0.05"}}));
  std::vector<uint8_t> payload(feedback.codec().max_encoded_bytes(n));
  std::vector<double> sum_in(n, 0.0), sum_fed(n, 0.0), sum_plain(n, 0.0);
  const auto drift = test_util::gaussian(n, seed, 0.3f);
  for (int t = 0; t < steps; ++t) {
    auto x = test_util::gaussian(n, seed + 1 + uint64_t(t));
    for (size_t i = 0; i < n; ++i) x[i] += drift[i];
    const size_t size = feedback.encode(3, x.data(), n, payload.data(), payload.size());
    std::vector<float> out(n);
    feedback.codec().decode(payload.data(), size, out.data(), n);
    const auto plain_out = decode_all(*plain, plain->encode(x.data(), n), n);
    const std::vector<float>& r = feedback.residuals().at(3);
    for (size_t i = 0; i < n; ++i) {
      sum_in[i] += x[i];
      sum_fed[i] += out[i];
      sum_plain[i] += plain_out[i];
      ASSERT_NEAR(sum_in[i] - sum_fed[i], r[i], 1e-3 + 1e-5 * std::fabs(sum_in[i]))
          << "seed " << seed << " step " << t << " element " << i;
    }
  }
  double gap = 0, plain_gap = 0;
  for (size_t i = 0; i < n; ++i) {
    gap += (sum_in[i] - sum_fed[i]) * (sum_in[i] - sum_fed[i]);
    plain_gap += (sum_in[i] - sum_plain[i]) * (sum_in[i] - sum_plain[i]);
  }
  EXPECT_LT(std::sqrt(gap), 0.2 * std::sqrt(plain_gap)) << "seed " << seed;
}

}  // namespace
}  // namespace cmpi::compress
