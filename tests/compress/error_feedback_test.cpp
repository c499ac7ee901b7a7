// ErrorFeedback: what was sent tracks what was given (sum of inputs minus
// sum of decoded outputs equals the residual, which stays within the bound
// that follows from the codec's contraction), residuals are per key, length
// mismatches are named, residuals export and import, and refused or
// non-finite inputs do not poison later steps.
#include "compress/error_feedback.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "compress/codec_registry.h"
#include "tests/compress/codec_test_util.h"
#include "tests/support/test_seed.h"

namespace cmpi::compress {
namespace {

using test_util::gaussian;

double norm2(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += double(x) * x;
  return std::sqrt(s);
}

// For a codec C with ||v - D(C(v))||^2 <= (1 - delta) ||v||^2 and inputs of
// norm <= G, r' = (x + r) - D(C(x + r)) gives ||r'|| <= q (G + ||r||) with
// q = sqrt(1 - delta), hence ||r|| <= q G / (1 - q) at every step.
// top-k: delta = k / n. sign with scale mean|v| per bucket of B values:
// ||v - s sign(v)||^2 = ||v||^2 - ||v||_1^2 / B <= (1 - 1/B) ||v||^2.
void check_tracking(const CodecSpec& spec, double delta, size_t n, int steps, uint64_t seed) {
  ErrorFeedback feedback(make_codec(spec));
  std::vector<double> sum_in(n, 0.0), sum_out(n, 0.0);
  std::vector<uint8_t> payload(feedback.codec().max_encoded_bytes(n));
  std::vector<float> out(n);
  const auto drift = gaussian(n, seed, 0.3f);  // a persistent direction, like a gradient
  double max_input = 0;
  const double q = std::sqrt(1 - delta);
  for (int t = 0; t < steps; ++t) {
    auto x = gaussian(n, seed + 1 + t);
    for (size_t i = 0; i < n; ++i) x[i] += drift[i];
    max_input = std::max(max_input, norm2(x));
    const size_t size = feedback.encode(7, x.data(), n, payload.data(), payload.size());
    feedback.codec().decode(payload.data(), size, out.data(), n);
    const std::vector<float>& r = feedback.residuals().at(7);
    for (size_t i = 0; i < n; ++i) {
      sum_in[i] += x[i];
      sum_out[i] += out[i];
      ASSERT_NEAR(sum_in[i] - sum_out[i], r[i], 1e-3 + 1e-5 * std::fabs(sum_in[i]))
          << spec.to_string() << " step " << t << " element " << i;
    }
    ASSERT_LE(norm2(r), 1.01 * q * max_input / (1 - q)) << spec.to_string() << " step " << t;
  }
  // Without feedback the same codec's outputs drift away from the inputs'
  // sum (its bias accumulates with the steps); with feedback the gap is the
  // bounded residual.
  auto plain = make_codec(spec);
  std::vector<double> sum_plain(n, 0.0);
  for (int t = 0; t < steps; ++t) {
    auto x = gaussian(n, seed + 1 + t);
    for (size_t i = 0; i < n; ++i) x[i] += drift[i];
    auto decoded = test_util::decode_all(*plain, plain->encode(x.data(), n), n);
    for (size_t i = 0; i < n; ++i) sum_plain[i] += decoded[i];
  }
  double gap = 0, plain_gap = 0;
  for (size_t i = 0; i < n; ++i) {
    gap += (sum_in[i] - sum_out[i]) * (sum_in[i] - sum_out[i]);
    plain_gap += (sum_in[i] - sum_plain[i]) * (sum_in[i] - sum_plain[i]);
  }
  EXPECT_LT(std::sqrt(gap), 0.2 * std::sqrt(plain_gap)) << spec.to_string();
}

TEST(ErrorFeedback, TopKRunningSumTracksInputs) {
  check_tracking(CodecSpec("topk", {{"ratio", "0.05"}}), 50.0 / 1000, 1000, 300,
                 cmpi::testing::test_seed());
}

TEST(ErrorFeedback, SignRunningSumTracksInputs) {
  check_tracking(CodecSpec("sign", {{"bucket", "8"}}), 1.0 / 8, 1000, 300,
                 cmpi::testing::test_seed());
}

// The identity error feedback rests on, for every lossy codec a rule may
// wrap (the quantizers natural and sign included): after encoding x with
// residual r, the new residual plus what the receiver decodes is x + r, to
// float rounding (the residual is formed as fl(fl(x + r) - sent)).
TEST(ErrorFeedback, ResidualPlusSentIsInputPlusPreviousResidual) {
  const size_t n = 1500;
  for (const char* text : {"natural", "natural:seed=5", "sign", "sign:bucket=8", "qsgd:levels=4",
                           "topk:ratio=0.05", "randomk:ratio=0.1", "threshold:threshold=0.5",
                           "sidco:density=0.05", "zfp:mode=rate,rate=8", "bf16"}) {
    SCOPED_TRACE(text);
    ErrorFeedback feedback(make_codec(CodecSpec::parse(text)));
    std::vector<uint8_t> payload(feedback.codec().max_encoded_bytes(n));
    std::vector<float> sent(n), previous(n, 0.f);
    for (int t = 0; t < 6; ++t) {
      const auto x = gaussian(n, cmpi::testing::test_seed() + 31 * t);
      const size_t size = feedback.encode(4, x.data(), n, payload.data(), payload.size());
      feedback.codec().decode(payload.data(), size, sent.data(), n);
      const std::vector<float>& r = feedback.residuals().at(4);
      bool changed = false;
      for (size_t i = 0; i < n; ++i) {
        const double w = double(x[i]) + double(previous[i]);
        const double u = std::ldexp(1.0, -23) * (std::fabs(w) + std::fabs(double(sent[i])));
        ASSERT_NEAR(double(r[i]) + double(sent[i]), w, u)
            << "step " << t << " element " << i << " seed " << cmpi::testing::test_seed();
        changed |= sent[i] != float(w);
      }
      EXPECT_TRUE(changed) << "the codec sent the input unchanged: nothing to feed back";
      previous = r;
    }
  }
}

TEST(ErrorFeedback, ResidualsAreKeptPerKeyAndLengthMismatchIsNamed) {
  ErrorFeedback feedback(make_codec(CodecSpec("topk", {{"ratio", "0.1"}})));
  auto a = gaussian(100, cmpi::testing::test_seed());
  auto b = gaussian(50, cmpi::testing::test_seed() + 1);
  std::vector<uint8_t> payload(feedback.codec().max_encoded_bytes(100));
  feedback.encode(1, a.data(), 100, payload.data(), payload.size());
  feedback.encode(2, b.data(), 50, payload.data(), payload.size());
  EXPECT_EQ(feedback.residuals().at(1).size(), 100u);
  EXPECT_EQ(feedback.residuals().at(2).size(), 50u);
  try {
    feedback.encode(1, a.data(), 99, payload.data(), payload.size());
    FAIL() << "length mismatch accepted";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("key 1"), std::string::npos) << what;
    EXPECT_NE(what.find("100"), std::string::npos) << what;
    EXPECT_NE(what.find("99"), std::string::npos) << what;
  }
  feedback.clear();
  EXPECT_TRUE(feedback.residuals().empty());
  EXPECT_THROW(ErrorFeedback(nullptr), std::invalid_argument);
}

TEST(ErrorFeedback, ExportedResidualsResumeIdentically) {
  const size_t n = 500;
  ErrorFeedback original(make_codec(CodecSpec("topk", {{"ratio", "0.02"}})));
  std::vector<uint8_t> payload(original.codec().max_encoded_bytes(n));
  for (int t = 0; t < 5; ++t)
    for (uint64_t key : {3, 4}) {
      auto x = gaussian(n, cmpi::testing::test_seed() + 10 * t + key);
      original.encode(key, x.data(), n, payload.data(), payload.size());
    }
  auto saved = original.residuals();
  ErrorFeedback resumed(make_codec(CodecSpec("topk", {{"ratio", "0.02"}})));
  resumed.import_residuals(saved);
  EXPECT_EQ(resumed.residuals(), original.residuals());

  auto x = gaussian(n, cmpi::testing::test_seed() + 99);
  std::vector<uint8_t> other(payload.size());
  const size_t a = original.encode(4, x.data(), n, payload.data(), payload.size());
  const size_t b = resumed.encode(4, x.data(), n, other.data(), other.size());
  ASSERT_EQ(a, b);
  EXPECT_TRUE(std::equal(payload.begin(), payload.begin() + a, other.begin()));
  EXPECT_EQ(resumed.residuals(), original.residuals());
}

TEST(ErrorFeedback, RefusedInputLeavesTheResidualUnchanged) {
  const size_t n = 300;
  ErrorFeedback feedback(make_codec(CodecSpec("qsgd", {{"levels", "2"}})));
  std::vector<uint8_t> payload(feedback.codec().max_encoded_bytes(n));
  auto x = gaussian(n, cmpi::testing::test_seed());
  feedback.encode(5, x.data(), n, payload.data(), payload.size());
  const auto before = feedback.residuals().at(5);
  x[10] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THROW(feedback.encode(5, x.data(), n, payload.data(), payload.size()),
               std::invalid_argument);
  EXPECT_EQ(feedback.residuals().at(5), before);
  // A first encode that fails creates no residual.
  EXPECT_THROW(feedback.encode(6, x.data(), n, payload.data(), payload.size()),
               std::invalid_argument);
  EXPECT_EQ(feedback.residuals().count(6), 0u);
  EXPECT_THROW(feedback.encode(6, x.data(), n, payload.data(), 10), std::invalid_argument);
  EXPECT_EQ(feedback.residuals().count(6), 0u);
}

TEST(ErrorFeedback, SentInfinityDoesNotPoisonLaterSteps) {
  const size_t n = 200;
  ErrorFeedback feedback(make_codec(CodecSpec("topk", {{"ratio", "0.05"}})));
  std::vector<uint8_t> payload(feedback.codec().max_encoded_bytes(n));
  std::vector<float> out(n);
  auto x = gaussian(n, cmpi::testing::test_seed());
  x[17] = INFINITY;
  size_t size = feedback.encode(8, x.data(), n, payload.data(), payload.size());
  feedback.codec().decode(payload.data(), size, out.data(), n);
  EXPECT_EQ(out[17], INFINITY);
  for (float r : feedback.residuals().at(8)) ASSERT_TRUE(std::isfinite(r));
  EXPECT_EQ(feedback.residuals().at(8)[17], 0.f);
  for (int t = 0; t < 20; ++t) {
    auto y = gaussian(n, cmpi::testing::test_seed() + 1 + t);
    size = feedback.encode(8, y.data(), n, payload.data(), payload.size());
    feedback.codec().decode(payload.data(), size, out.data(), n);
    for (float v : out) ASSERT_TRUE(std::isfinite(v)) << "step " << t;
  }
}

TEST(ErrorFeedback, LosslessCodecKeepsAZeroResidual) {
  const size_t n = 64;
  ErrorFeedback feedback(make_codec(CodecSpec("identity")));
  std::vector<uint8_t> payload(feedback.codec().max_encoded_bytes(n));
  std::vector<float> out(n);
  for (int t = 0; t < 3; ++t) {
    auto x = gaussian(n, cmpi::testing::test_seed() + t);
    const size_t size = feedback.encode(0, x.data(), n, payload.data(), payload.size());
    feedback.codec().decode(payload.data(), size, out.data(), n);
    EXPECT_EQ(out, x);
    for (float r : feedback.residuals().at(0)) EXPECT_EQ(r, 0.f);
  }
}

}  // namespace
}  // namespace cmpi::compress
