// topk, randomk, threshold: which entries are kept, that kept entries arrive
// exactly (randomk: rescaled by n/k), randomk's unbiasedness, non-finite
// input, parameters, and refusal of corrupted bodies.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "compress/codec_registry.h"
#include "compress/sparse_body.h"
#include "compress/sparse_codec.h"
#include "compress/sparse_indices.h"
#include "tests/compress/codec_test_util.h"
#include "tests/support/test_seed.h"

namespace cmpi::compress {
namespace {

using test_util::decode_all;
using test_util::float_bits;
using test_util::gaussian;

size_t nonzeros(const std::vector<float>& v) {
  return size_t(std::count_if(v.begin(), v.end(), [](float x) { return x != 0.f; }));
}

TEST(SparseKeptCount, FollowsCeilOfRatioTimesN) {
  EXPECT_EQ(kept_count_for_ratio(0.01, 0), 0u);
  EXPECT_EQ(kept_count_for_ratio(0.01, 1), 1u);
  EXPECT_EQ(kept_count_for_ratio(0.01, 50), 1u);
  EXPECT_EQ(kept_count_for_ratio(0.01, 1001), 11u);
  EXPECT_EQ(kept_count_for_ratio(0.25, 64), 16u);
  EXPECT_EQ(kept_count_for_ratio(1.0, 77), 77u);
}

TEST(TopK, KeepsExactlyTheKLargestMagnitudesBitExact) {
  const uint64_t seed = cmpi::testing::test_seed();
  for (size_t n : {1, 2, 100, 1001, 65536}) {
    for (double ratio : {0.001, 0.01, 0.3, 1.0}) {
      auto codec = make_codec(CodecSpec("topk", {{"ratio", std::to_string(ratio)}}));
      auto x = gaussian(n, seed + n);
      auto out = decode_all(*codec, codec->encode(x.data(), n), n);
      const size_t k = kept_count_for_ratio(ratio, n);
      // Reference: the k-th largest magnitude (Gaussian data has no ties).
      std::vector<float> mags(n);
      for (size_t i = 0; i < n; ++i) mags[i] = std::fabs(x[i]);
      std::nth_element(mags.begin(), mags.begin() + (k - 1), mags.end(), std::greater<float>());
      const float kth = mags[k - 1];
      size_t kept = 0;
      for (size_t i = 0; i < n; ++i) {
        if (std::fabs(x[i]) >= kth) {
          ASSERT_EQ(float_bits(out[i]), float_bits(x[i])) << "n=" << n << " i=" << i;
          ++kept;
        } else {
          ASSERT_EQ(out[i], 0.f) << "n=" << n << " i=" << i;
        }
      }
      EXPECT_EQ(kept, k) << "n=" << n << " ratio=" << ratio;
    }
  }
}

// Reference check: out keeps x bit-exactly at exactly k positions, zero
// elsewhere, and no dropped magnitude exceeds a kept one.
void expect_top_k(const std::vector<float>& x, const std::vector<float>& out, size_t k) {
  size_t kept = 0;
  float smallest_kept = INFINITY, largest_dropped = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (out[i] != 0.f) {
      ++kept;
      ASSERT_EQ(float_bits(out[i]), float_bits(x[i])) << i;
      smallest_kept = std::min(smallest_kept, std::fabs(x[i]));
    } else {
      largest_dropped = std::max(largest_dropped, std::fabs(x[i]));
    }
  }
  EXPECT_EQ(kept, k);
  EXPECT_GE(smallest_kept, largest_dropped);
}

// Large inputs take the sampled path (a strided sample sets a floor, exact
// selection runs on the candidates above it); the result must be the exact
// top k, also when the sample is misleading and the exact path takes over.
TEST(TopK, LargeInputsSelectExactlyThroughTheSample) {
  const size_t n = (size_t(1) << 20) + 3;
  auto x = gaussian(n, cmpi::testing::test_seed());
  for (double ratio : {0.001, 0.01, 0.1}) {
    auto codec = make_codec(CodecSpec("topk", {{"ratio", std::to_string(ratio)}}));
    expect_top_k(x, decode_all(*codec, codec->encode(x.data(), n), n),
                 kept_count_for_ratio(ratio, n));
  }
  // Misleading sample: the strided positions hold the largest values, so the
  // floor it suggests lets through fewer than k candidates.
  const size_t stride = n / (1 << 14);
  for (size_t i = 0; i < n; ++i) x[i] = 0.001f * float(i % 1000 + 1);
  for (size_t s = 0; s < (1 << 14); ++s) x[s * stride + stride / 2] = 100.f + float(s);
  auto codec = make_codec(CodecSpec("topk", {{"ratio", "0.01"}}));
  expect_top_k(x, decode_all(*codec, codec->encode(x.data(), n), n), kept_count_for_ratio(0.01, n));
}

TEST(TopK, TiesStillKeepExactlyK) {
  // Magnitudes from a handful of values, so the k-th is tied many times.
  std::mt19937_64 rng(cmpi::testing::test_seed());
  const size_t n = 5000;
  std::vector<float> x(n);
  for (auto& v : x) v = float(int(rng() % 7) - 3) * 0.5f;
  x[0] = 9.f;  // never all zero
  auto codec = make_codec(CodecSpec("topk", {{"ratio", "0.1"}}));
  auto out = decode_all(*codec, codec->encode(x.data(), n), n);
  const size_t k = kept_count_for_ratio(0.1, n);
  size_t kept = 0;
  float smallest_kept = INFINITY, largest_dropped = 0;
  std::vector<bool> is_kept(n, false);
  auto payload = codec->encode(x.data(), n);
  const SparseBodyInfo info =
      sparse_body_info(payload.data() + kPayloadHeaderBytes, payload.size() - kPayloadHeaderBytes);
  EXPECT_EQ(info.kept, k);
  for (size_t i = 0; i < n; ++i) {
    if (out[i] != 0.f) {
      ++kept;
      smallest_kept = std::min(smallest_kept, std::fabs(x[i]));
      EXPECT_EQ(out[i], x[i]);
    } else {
      largest_dropped = std::max(largest_dropped, std::fabs(x[i]));
    }
  }
  EXPECT_EQ(kept, k);  // the k-th magnitude (1.5) is nonzero, so all k read back nonzero
  EXPECT_GE(smallest_kept, largest_dropped);
}

TEST(TopK, NonFiniteValuesAreAlwaysKeptUnchanged) {
  auto x = gaussian(1000, cmpi::testing::test_seed());
  x[10] = std::numeric_limits<float>::quiet_NaN();
  x[500] = -INFINITY;
  x[999] = INFINITY;
  auto codec = make_codec(CodecSpec("topk", {{"ratio", "0.004"}}));  // k = 4
  auto out = decode_all(*codec, codec->encode(x.data(), x.size()), x.size());
  EXPECT_TRUE(std::isnan(out[10]));
  EXPECT_EQ(out[500], -INFINITY);
  EXPECT_EQ(out[999], INFINITY);
  EXPECT_EQ(nonzeros(out), 4u);
}

TEST(TopK, EmptyInputRoundTrips) {
  auto codec = make_codec(CodecSpec("topk"));
  auto payload = codec->encode(nullptr, 0);
  EXPECT_NO_THROW(codec->decode(payload.data(), payload.size(), nullptr, 0));
}

TEST(RandomK, KeepsKEntriesRescaledByNOverK) {
  const size_t n = 10007;
  auto x = gaussian(n, cmpi::testing::test_seed());
  auto codec = make_codec(CodecSpec("randomk", {{"ratio", "0.01"}, {"seed", "5"}}));
  auto out = decode_all(*codec, codec->encode(x.data(), n), n);
  const size_t k = kept_count_for_ratio(0.01, n);
  EXPECT_EQ(nonzeros(out), k);
  const float scale = float(double(n) / double(k));
  for (size_t i = 0; i < n; ++i)
    if (out[i] != 0.f) EXPECT_EQ(out[i], x[i] * scale) << i;
}

TEST(RandomK, HighRatiosKeepKAndDensityPicksBitmap) {
  const size_t n = 3000;
  auto x = gaussian(n, cmpi::testing::test_seed());
  for (double ratio : {0.5, 0.8, 1.0}) {
    auto codec = make_codec(CodecSpec("randomk", {{"ratio", std::to_string(ratio)}}));
    auto payload = codec->encode(x.data(), n);
    EXPECT_EQ(nonzeros(decode_all(*codec, payload, n)), kept_count_for_ratio(ratio, n));
    const auto info = sparse_body_info(payload.data() + kPayloadHeaderBytes,
                                       payload.size() - kPayloadHeaderBytes);
    EXPECT_EQ(IndexForm(info.index_form), ratio == 1.0 ? IndexForm::kAll : IndexForm::kBitmap);
  }
}

// Each trial keeps x_i * n/k with probability p = k/n, else 0: mean x_i and
// standard deviation |x_i| sqrt(n/k - 1). Over T trials the sample mean is
// within 6 standard errors except with probability ~2e-9 per element (the
// counts are binomial with T p >= 1000, close to normal), so 64 elements
// fail together with probability < 1e-7. A codec that forgot the n/k
// rescaling would be off by a factor 4 here.
TEST(RandomK, MeanOfManyEncodingsIsTheInput) {
  const size_t n = 64;
  const int trials = 20000;
  auto x = gaussian(n, cmpi::testing::test_seed());
  auto codec = make_codec(CodecSpec(
      "randomk", {{"ratio", "0.25"}, {"seed", std::to_string(cmpi::testing::test_seed())}}));
  std::vector<double> sum(n, 0.0);
  std::vector<float> out(n);
  for (int t = 0; t < trials; ++t) {
    auto payload = codec->encode(x.data(), n);
    codec->decode(payload.data(), payload.size(), out.data(), n);
    for (size_t i = 0; i < n; ++i) sum[i] += out[i];
  }
  const double k = double(kept_count_for_ratio(0.25, n));
  for (size_t i = 0; i < n; ++i) {
    const double standard_error = std::fabs(x[i]) * std::sqrt((n / k - 1) / trials);
    EXPECT_NEAR(sum[i] / trials, x[i], 6 * standard_error + 1e-6) << "element " << i;
  }
}

TEST(RandomK, SameSeedSamePositionsAndFreshDrawsPerEncode) {
  const size_t n = 4096;
  auto x = gaussian(n, cmpi::testing::test_seed());
  auto a = make_codec(CodecSpec("randomk", {{"ratio", "0.01"}, {"seed", "42"}}));
  auto b = make_codec(CodecSpec("randomk", {{"ratio", "0.01"}, {"seed", "42"}}));
  auto c = make_codec(CodecSpec("randomk", {{"ratio", "0.01"}, {"seed", "43"}}));
  auto first = a->encode(x.data(), n);
  EXPECT_EQ(first, b->encode(x.data(), n));
  EXPECT_NE(first, c->encode(x.data(), n));
  EXPECT_NE(first, a->encode(x.data(), n));
}

TEST(RandomK, NonFiniteInputIsRefusedNamingTheIndex) {
  auto x = gaussian(100, cmpi::testing::test_seed());
  x[37] = std::numeric_limits<float>::quiet_NaN();
  auto codec = make_codec(CodecSpec("randomk", {{"ratio", "0.5"}}));
  try {
    codec->encode(x.data(), x.size());
    FAIL() << "NaN accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("input[37]"), std::string::npos) << e.what();
  }
  auto sparse = make_codec(CodecSpec("randomk", {{"ratio", "0.01"}}));
  std::vector<float> huge(100, 3e38f);  // finite, but 3e38 * n/k overflows
  EXPECT_THROW(sparse->encode(huge.data(), huge.size()), std::invalid_argument);
}

TEST(Threshold, KeepsExactlyTheEntriesAtOrAboveT) {
  const size_t n = 20000;
  auto x = gaussian(n, cmpi::testing::test_seed());
  x[5] = 1.5f;
  x[6] = -1.5f;
  auto codec = make_codec(CodecSpec("threshold", {{"threshold", "1.5"}}));
  auto out = decode_all(*codec, codec->encode(x.data(), n), n);
  for (size_t i = 0; i < n; ++i) {
    if (std::fabs(x[i]) >= 1.5f)
      ASSERT_EQ(float_bits(out[i]), float_bits(x[i])) << i;
    else
      ASSERT_EQ(out[i], 0.f) << i;
  }
}

TEST(Threshold, ZeroKeepsAllAndHugeKeepsNone) {
  const size_t n = 777;
  auto x = gaussian(n, cmpi::testing::test_seed());
  x[3] = 0.f;
  auto all = make_codec(CodecSpec("threshold", {{"threshold", "0"}}));
  auto payload = all->encode(x.data(), n);
  EXPECT_EQ(payload.size(), kPayloadHeaderBytes + kSparseBodyFixedBytes + 4 * n);
  auto out = decode_all(*all, payload, n);
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(float_bits(out[i]), float_bits(x[i]));
  auto none = make_codec(CodecSpec("threshold", {{"threshold", "1e30"}}));
  auto empty = none->encode(x.data(), n);
  EXPECT_EQ(empty.size(), kPayloadHeaderBytes + kSparseBodyFixedBytes);
  EXPECT_EQ(nonzeros(decode_all(*none, empty, n)), 0u);
}

TEST(Threshold, NonFiniteValuesAreKept) {
  std::vector<float> x = {0.1f, INFINITY, -0.2f, std::numeric_limits<float>::quiet_NaN(), 5.f};
  auto codec = make_codec(CodecSpec("threshold", {{"threshold", "1"}}));
  auto out = decode_all(*codec, codec->encode(x.data(), x.size()), x.size());
  EXPECT_EQ(out[0], 0.f);
  EXPECT_EQ(out[1], INFINITY);
  EXPECT_TRUE(std::isnan(out[3]));
  EXPECT_EQ(out[4], 5.f);
}

TEST(Sparsifiers, BadParametersAreNamed) {
  auto message = [](const CodecSpec& spec) -> std::string {
    try {
      make_codec(spec);
    } catch (const CodecError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message(CodecSpec("topk", {{"ratio", "0"}})).find("'ratio'"), std::string::npos);
  EXPECT_NE(message(CodecSpec("topk", {{"ratio", "1.5"}})).find("'ratio'"), std::string::npos);
  EXPECT_NE(message(CodecSpec("randomk", {{"ratio", "x"}})).find("'ratio'"), std::string::npos);
  EXPECT_NE(message(CodecSpec("randomk", {{"k", "3"}})).find("'k'"), std::string::npos);
  EXPECT_NE(message(CodecSpec("threshold")).find("required"), std::string::npos);
  EXPECT_NE(message(CodecSpec("threshold", {{"threshold", "-1"}})).find("'threshold'"),
            std::string::npos);
  EXPECT_NE(message(CodecSpec("threshold", {{"threshold", "1e40"}})).find("'threshold'"),
            std::string::npos);
}

TEST(SparsifierBodyFuzz, CorruptedBodiesAreRefused) {
  const size_t n = 2000;
  auto x = gaussian(n, cmpi::testing::test_seed());
  auto codec = make_codec(CodecSpec("topk", {{"ratio", "0.02"}}));
  auto payload = codec->encode(x.data(), n);
  auto body = test_util::body_of(payload);
  auto outcome = [&](const std::vector<uint8_t>& b) {
    return test_util::decode_outcome(*codec, test_util::with_body(payload, b), n);
  };
  EXPECT_EQ(outcome(body), "");
  auto kept_too_many = body;
  kept_too_many[0] ^= 0x40;  // k += or -= 64
  EXPECT_EQ(outcome(kept_too_many), "body");
  auto huge_k = body;
  huge_k[7] = 0x7f;
  EXPECT_EQ(outcome(huge_k), "body");
  auto bad_form = body;
  bad_form[8] = 9;
  EXPECT_EQ(outcome(bad_form), "body");
  auto index_len = body;
  index_len[9] ^= 1;
  EXPECT_EQ(outcome(index_len), "body");
  EXPECT_EQ(outcome(std::vector<uint8_t>(body.begin(), body.begin() + 10)), "body");
  auto truncated = body;
  truncated.pop_back();
  EXPECT_EQ(outcome(truncated), "body");
  auto flags = payload;
  PayloadHeader header = read_payload_header(flags.data(), flags.size());
  header.flags = 1;
  write_payload_header(header, flags.data());
  EXPECT_EQ(test_util::decode_outcome(*codec, flags, n), "flags");
}

TEST(SparsifierBodyFuzz, MutatedBodiesDecodeOrThrowDecodeError) {
  const uint64_t seed = cmpi::testing::test_seed();
  const size_t n = 3001;
  auto x = gaussian(n, seed);
  for (const char* spec :
       {"topk:ratio=0.01", "topk:ratio=0.3", "randomk:ratio=0.001", "randomk:ratio=0.6",
        "threshold:threshold=1.0", "threshold:threshold=3.5", "threshold:threshold=0"}) {
    auto codec = make_codec(CodecSpec::parse(spec));
    test_util::mutate_bodies(*codec, codec->encode(x.data(), n), n, seed + 11, 1500);
  }
}

}  // namespace
}  // namespace cmpi::compress
