// The SSE4.1 quantizer kernels against their scalar references: identical
// bits on random inputs of ragged lengths, special values included.
#include "compress/quantize_kernels.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "tests/support/test_seed.h"

namespace cmpi::compress {
namespace {

#if defined(CMPI_HAVE_SSE41_KERNELS)

std::vector<float> mixed_values(size_t n, std::mt19937_64& rng) {
  std::normal_distribution<float> dist(0.f, 1.f);
  const float specials[] = {0.f,     -0.f,   INFINITY, -INFINITY, std::nanf(""), FLT_MAX, -FLT_MAX,
                            FLT_MIN, 1e-40f, -3e-44f,  0x1p127f,  1.f,           -2.f};
  std::vector<float> v(n);
  for (auto& x : v)
    x = rng() % 5 == 0 ? specials[rng() % std::size(specials)]
                       : std::ldexp(dist(rng), int(rng() % 40) - 20);
  return v;
}

std::vector<uint32_t> uniforms(size_t n, unsigned bits, std::mt19937_64& rng) {
  std::vector<uint32_t> u(n);
  for (auto& x : u) x = uint32_t(rng()) & ((1u << bits) - 1);
  return u;
}

std::vector<uint32_t> bits_of(const std::vector<float>& v) {
  std::vector<uint32_t> b(v.size());
  std::memcpy(b.data(), v.data(), 4 * v.size());
  return b;
}

TEST(QuantizeKernels, Sse41MatchesScalarBitForBit) {
  if (!kernels::sse41_supported()) GTEST_SKIP() << "this CPU has no SSE4.1";
  std::mt19937_64 rng(cmpi::testing::test_seed());
  for (int round = 0; round < 300; ++round) {
    const size_t n = rng() % 140;
    const auto x = mixed_values(n, rng);

    // qsgd needs finite input with |x| * inv <= s: use a bucket-max scale.
    std::vector<float> finite(n);
    float max_abs = 0;
    for (size_t i = 0; i < n; ++i) {
      finite[i] = std::isfinite(x[i]) ? x[i] : 0.5f;
      max_abs = std::max(max_abs, std::fabs(finite[i]));
    }
    const uint32_t s = 1 + uint32_t(rng() % 300);
    const float inv = max_abs > 0 ? float(double(s) / max_abs) : 0.f;
    if (!std::isfinite(inv)) continue;
    const auto u24 = uniforms(n, 24, rng), u23 = uniforms(n, 23, rng);
    std::vector<uint32_t> a(n), b(n);
    kernels::scalar::qsgd_quantize(finite.data(), n, inv, s, u24.data(), a.data());
    kernels::sse41::qsgd_quantize(finite.data(), n, inv, s, u24.data(), b.data());
    ASSERT_EQ(a, b) << "qsgd_quantize n=" << n;
    for (auto c : a) ASSERT_LE(c, 2 * s);
    EXPECT_EQ(kernels::scalar::max_code(a.data(), n), kernels::sse41::max_code(a.data(), n));

    std::vector<float> fa(n), fb(n);
    kernels::scalar::qsgd_dequantize(a.data(), n, s, 0.37f, fa.data());
    kernels::sse41::qsgd_dequantize(a.data(), n, s, 0.37f, fb.data());
    ASSERT_EQ(bits_of(fa), bits_of(fb)) << "qsgd_dequantize";

    kernels::scalar::natural_encode(x.data(), n, u23.data(), a.data());
    kernels::sse41::natural_encode(x.data(), n, u23.data(), b.data());
    ASSERT_EQ(a, b) << "natural_encode";
    kernels::scalar::natural_decode(a.data(), n, fa.data());
    kernels::sse41::natural_decode(a.data(), n, fb.data());
    ASSERT_EQ(bits_of(fa), bits_of(fb)) << "natural_decode";

    const size_t word_len = std::min<size_t>(n, 64);
    EXPECT_EQ(kernels::scalar::sign_bits(x.data(), word_len),
              kernels::sse41::sign_bits(x.data(), word_len));
    std::vector<uint8_t> stream((n + 16) / 8 + 1);
    for (auto& byte : stream) byte = uint8_t(rng());
    const size_t first = rng() % 16;
    kernels::scalar::sign_decode(stream.data(), first, n, 0.25f, fa.data());
    kernels::sse41::sign_decode(stream.data(), first, n, 0.25f, fb.data());
    ASSERT_EQ(bits_of(fa), bits_of(fb)) << "sign_decode first=" << first;

    EXPECT_EQ(kernels::scalar::max_magnitude_key(x.data(), n),
              kernels::sse41::max_magnitude_key(x.data(), n));
    EXPECT_EQ(kernels::scalar::any_nonfinite(x.data(), n),
              kernels::sse41::any_nonfinite(x.data(), n));
    EXPECT_EQ(kernels::scalar::any_nonfinite(finite.data(), n), false);
    EXPECT_EQ(kernels::sse41::any_nonfinite(finite.data(), n), false);
    const float sq_a = kernels::scalar::sum_squares(finite.data(), n);
    const float sq_b = kernels::sse41::sum_squares(finite.data(), n);
    EXPECT_TRUE(std::memcmp(&sq_a, &sq_b, 4) == 0) << sq_a << " vs " << sq_b;
    const float abs_a = kernels::scalar::sum_abs(finite.data(), n);
    const float abs_b = kernels::sse41::sum_abs(finite.data(), n);
    EXPECT_TRUE(std::memcmp(&abs_a, &abs_b, 4) == 0) << abs_a << " vs " << abs_b;
  }
}

#else

TEST(QuantizeKernels, ScalarBuildHasNoSimdVariantToCompare) {
  GTEST_SKIP() << "not x86-64: only the scalar kernels exist";
}

#endif

}  // namespace
}  // namespace cmpi::compress
