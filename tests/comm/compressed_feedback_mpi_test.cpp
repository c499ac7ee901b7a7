// Error feedback through the compressed collectives. Allgathering the same
// input T times with feedback, the sum of what every rank received for a
// segment tracks T times the input to within one encoding's error (the
// residual left over), instead of T encodings' errors without feedback. An
// allreduce with feedback keeps every rank's result identical and within the
// bound of its encodings: two of them (own input, final sum) now carry the
// previous call's residual too, N+2 tolerances in all.
#include <gtest/gtest.h>

#include <cmath>

#include "comm/algorithms/compressed_collectives.h"
#include "compress/error_feedback.h"
#include "tests/comm/compressed_test_support.h"

namespace cmpi::comm {
namespace {

using namespace cmpi::testing;

constexpr uint64_t kTestId = 8;
constexpr int kCalls = 8;

// Largest |sum over kCalls allgathers - kCalls * input| over all elements.
double accumulated_error(const PrivateComm& pc, compress::Codec* codec,
                         compress::ErrorFeedback* feedback, size_t length, size_t chunk) {
  std::vector<size_t> counts(pc.size(), length);
  std::vector<float> in = make_data(stream_id(kTestId, 1, pc.rank()), length, false);
  std::vector<double> accumulated(length * pc.size(), 0.0);
  std::vector<float> out(length * pc.size());
  CompressedContext ctx = make_context(pc, codec, chunk);
  ctx.feedback = feedback;
  ctx.buffer_key = 77;
  for (int call = 0; call < kCalls; ++call) {
    ring_allgather(ctx, in.data(), out.data(), counts);
    for (size_t i = 0; i < out.size(); ++i) accumulated[i] += out[i];
  }
  double worst = 0;
  for (int j = 0; j < pc.size(); ++j) {
    std::vector<float> x = make_data(stream_id(kTestId, 1, j), length, false);
    for (size_t i = 0; i < length; ++i)
      worst = std::max(worst, std::fabs(accumulated[j * length + i] - kCalls * double(x[i])));
  }
  return worst;
}

TEST(CompressedFeedback, AllgatherSumTracksTheInputWithinOneEncoding) {
  CMPI_REQUIRE_CODEC(plain, zfp_accuracy_spec());
  CMPI_REQUIRE_CODEC(inner, zfp_accuracy_spec());
  PrivateComm pc;
  compress::ErrorFeedback feedback(std::move(inner));
  const size_t length = 1023, chunk = 341;
  const double with = accumulated_error(pc, &feedback.codec(), &feedback, length, chunk);
  const double without = accumulated_error(pc, plain.get(), nullptr, length, chunk);
  // Rounding of x + residual adds at most kCalls * 2^-24 * (|x| + t) per element.
  const double bound = kZfpTolerance + kCalls * std::ldexp(1.0, -24) * (1 + kZfpTolerance);
  EXPECT_LE(with, bound);
  // Without feedback the same error repeats every call: the test can tell.
  EXPECT_GT(without, bound) << "zfp errors too small for this test to discriminate";
}

TEST(CompressedFeedback, AllreduceStaysBoundedAndIdenticalOnAllRanks) {
  CMPI_REQUIRE_CODEC(inner, zfp_accuracy_spec());
  PrivateComm pc;
  compress::ErrorFeedback feedback(std::move(inner));
  const size_t n = 5000, chunk = 700;
  const int ranks = pc.size();
  std::vector<std::vector<float>> inputs;
  for (int j = 0; j < ranks; ++j) inputs.push_back(make_data(stream_id(kTestId, 2, j), n, false));
  for (int call = 0; call < 3; ++call) {
    SCOPED_TRACE("call " + std::to_string(call));
    std::vector<float> data = inputs[pc.rank()];
    CompressedContext ctx = make_context(pc, &feedback.codec(), chunk);
    ctx.feedback = &feedback;
    ctx.buffer_key = 5;
    ring_allreduce(ctx, data.data(), n);
    EXPECT_TRUE(same_on_all_ranks(pc.comm(), data.data(), n));
    const double t = kZfpTolerance * (ranks + 2);
    const double u = std::ldexp(1.0, -24) * (ranks - 1);
    for (size_t i = 0; i < n; ++i) {
      double exact = 0, magnitude = 0;
      for (int j = 0; j < ranks; ++j) {
        exact += inputs[j][i];
        magnitude += std::fabs(inputs[j][i]);
      }
      double err = std::fabs(data[i] - exact);
      if (!(err <= t + u * (magnitude + t) + 1e-12)) {
        ADD_FAILURE() << "element " << i << ": error " << err;
        break;
      }
    }
  }
  EXPECT_FALSE(feedback.residuals().empty()) << "feedback was never used";
}

}  // namespace
}  // namespace cmpi::comm
