// mpc chunk plans: every plan the format allows round-trips bit-exactly and
// gives the same bytes at every SIMD level; the encoder's choice skips
// differencing on noise-like data (and then beats plain MPC), keeps it on
// smooth data and finds the period of interleaved components with dim=auto;
// plans outside the format are named.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "compress/mpc_chunk.h"
#include "compress/mpc_chunk_plan.h"
#include "tests/support/float_data.h"
#include "tests/support/test_seed.h"

namespace cmpi::compress {
namespace {

using cmpi::testing::from_bits;
using cmpi::testing::gaussian;
using cmpi::testing::smooth;

std::vector<SimdLevel> supported_levels() {
  std::vector<SimdLevel> levels;
  for (SimdLevel level : {SimdLevel::kScalar, SimdLevel::kSsse3, SimdLevel::kAvx2})
    if (simd_level_supported(level)) levels.push_back(level);
  return levels;
}

// Data of every kind the plans are for, plus patterns no plan suits.
std::vector<std::vector<float>> test_data(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> random_bits(n), specials(n);
  const uint32_t special[] = {0x00000000u, 0x80000000u, 0x00000001u, 0x7F800000u,
                              0xFF800000u, 0x7FC12345u, 0xFFFFFFFFu, 0x7F800001u};
  for (size_t i = 0; i < n; ++i) {
    random_bits[i] = from_bits(static_cast<uint32_t>(rng()));
    specials[i] = rng() % 3 ? from_bits(special[rng() % 8]) : random_bits[i];
  }
  return {smooth(n, seed), gaussian(n, 1e-3f, seed), gaussian(n, 0.1f, seed), random_bits,
          specials};
}

// A valid plan drawn at random, edges included.
MpcChunkPlan random_plan(std::mt19937_64& rng) {
  MpcChunkPlan plan;
  plan.stride = static_cast<unsigned>(rng() % 33);
  plan.reference = rng() % 3 ? static_cast<uint32_t>(rng()) : 0u;
  plan.first_lagged = 1 + static_cast<unsigned>(rng() % 32);
  plan.first_word_plane = static_cast<unsigned>(rng() % 33);
  const unsigned byte_planes =
      static_cast<unsigned>(rng() % (std::min(kMaxBytePlanes, plan.first_word_plane) + 1));
  plan.first_byte_plane = plan.first_word_plane - byte_planes;
  return plan;
}

void expect_round_trip(const std::vector<float>& in, const MpcChunkPlan& plan,
                       const std::string& what) {
  std::vector<uint8_t> reference;
  for (SimdLevel level : supported_levels()) {
    std::vector<uint8_t> bytes(mpc_max_chunk_bytes(in.size()));
    bytes.resize(mpc_encode_chunk_with_plan(in.data(), in.size(), plan, bytes.data(), level));
    if (reference.empty()) reference = bytes;
    ASSERT_EQ(bytes, reference) << what << " at " << simd_level_name(level);
    // An exactly sized copy, so that AddressSanitizer would see an over-read.
    std::vector<uint8_t> exact(bytes);
    for (SimdLevel decode_level : supported_levels()) {
      std::vector<float> out(in.size(), 1.5f);
      mpc_decode_chunk(exact.data(), exact.size(), out.data(), out.size(), 0, decode_level);
      ASSERT_EQ(0, std::memcmp(in.data(), out.data(), 4 * in.size()))
          << what << " decoded at " << simd_level_name(decode_level);
    }
  }
}

std::string describe(const MpcChunkPlan& p) {
  return "plan {stride " + std::to_string(p.stride) + ", reference " + std::to_string(p.reference) +
         ", lagged from " + std::to_string(p.first_lagged) + ", byte planes " +
         std::to_string(p.first_byte_plane) + ".." + std::to_string(p.first_word_plane) + "}";
}

TEST(MpcChunkPlan, EveryPlanRoundTripsWithTheSameBytesAtEveryLevel) {
  const uint64_t seed = cmpi::testing::test_seed();
  std::mt19937_64 rng(seed);
  std::vector<MpcChunkPlan> plans = {
      {1, 0, 1, 0, 0},                      // plain MPC
      {0, 0, 32, 32, 32},                   // everything stored whole
      {32, ~0u, 32, 0, 0},                  // longest stride, nothing lagged
      {0, 0x3D800000u, 29, 25, 27},         // as chosen for activations
      {3, 0, 2, 22, 22 + kMaxBytePlanes},   // the most byte planes
      {0, 0, 1, 32 - kMaxBytePlanes, 32}};  // byte planes up to the sign
  for (int i = 0; i < 24; ++i) plans.push_back(random_plan(rng));
  // Lengths around a block and a group (2048 words) of blocks.
  for (size_t n : {size_t(3), size_t(31), size_t(32), size_t(33), size_t(100), size_t(2047),
                   size_t(2048), size_t(4100)}) {
    const auto data = test_data(n, seed + n);
    for (const auto& plan : plans)
      for (size_t k = 0; k < data.size(); ++k)
        expect_round_trip(
            data[k], plan,
            describe(plan) + " n " + std::to_string(n) + " data " + std::to_string(k));
  }
}

TEST(MpcChunkPlan, ChosenPlansRoundTripForEveryDim) {
  const uint64_t seed = cmpi::testing::test_seed() + 1;
  for (unsigned dim : {0u, 1u, 3u, 32u}) {
    for (size_t n : {size_t(1), size_t(40), size_t(5000)}) {
      const auto data = test_data(n, seed + n + dim);
      for (size_t k = 0; k < data.size(); ++k) {
        std::vector<uint8_t> reference;
        for (SimdLevel level : supported_levels()) {
          std::vector<uint8_t> bytes(mpc_max_chunk_bytes(n));
          bytes.resize(mpc_encode_chunk(data[k].data(), n, dim, bytes.data(), level));
          if (reference.empty()) reference = bytes;
          ASSERT_EQ(bytes, reference) << "dim " << dim << " data " << k;
          std::vector<float> out(n, 1.5f);
          mpc_decode_chunk(bytes.data(), bytes.size(), out.data(), n, 0, level);
          ASSERT_EQ(0, std::memcmp(data[k].data(), out.data(), 4 * n))
              << "dim " << dim << " n " << n << " data " << k;
        }
      }
    }
  }
}

size_t encoded_size(const std::vector<float>& in, const MpcChunkPlan& plan) {
  std::vector<uint8_t> bytes(mpc_max_chunk_bytes(in.size()));
  return mpc_encode_chunk_with_plan(in.data(), in.size(), plan, bytes.data(), best_simd_level());
}

TEST(MpcChunkPlan, NoiseLikeDataSkipsDifferencingAndBeatsPlainMpc) {
  // Activation-like: independent values, random signs, a few octaves of
  // exponents. Differencing only adds entropy; the mantissa planes are
  // stored whole and the exponent planes eliminated per byte and word.
  const auto in = gaussian(65536, 0.1f, cmpi::testing::test_seed() + 2);
  const MpcChunkPlan plan = choose_mpc_plan(in.data(), in.size(), 1, best_simd_level());
  EXPECT_EQ(plan.stride, 0u) << describe(plan);
  EXPECT_GE(plan.first_byte_plane, 20u) << describe(plan);
  EXPECT_GT(plan.first_word_plane, plan.first_byte_plane) << describe(plan);
  const MpcChunkPlan plain{1, 0, 1, 0, 0};
  // Plain MPC keeps about 29 of 32 bits here, the chosen plan under 28.
  EXPECT_LT(double(encoded_size(in, plan)), 0.965 * double(encoded_size(in, plain)))
      << describe(plan);
}

TEST(MpcChunkPlan, SmoothDataKeepsItsStride) {
  const auto in = smooth(65536, cmpi::testing::test_seed() + 3);
  for (unsigned dim : {1u, 0u}) {
    const MpcChunkPlan plan = choose_mpc_plan(in.data(), in.size(), dim, best_simd_level());
    EXPECT_EQ(plan.stride, 1u) << "dim " << dim << " " << describe(plan);
    EXPECT_LE(encoded_size(in, plan), encoded_size(in, {1, 0, 1, 0, 0})) << describe(plan);
  }
}

TEST(MpcChunkPlan, AutoFindsThePeriodOfInterleavedComponents) {
  // Four interleaved smooth components on different scales.
  const auto base = smooth(4 * 16384, cmpi::testing::test_seed() + 4);
  std::vector<float> in(base.size());
  const float scale[4] = {1.f, 1000.f, -0.001f, 7.f};
  for (size_t i = 0; i < in.size(); ++i) in[i] = base[i / 4 * 4] * scale[i % 4];
  const MpcChunkPlan plan = choose_mpc_plan(in.data(), in.size(), 0, best_simd_level());
  EXPECT_EQ(plan.stride, 4u) << describe(plan);
  const MpcChunkPlan dim1 = choose_mpc_plan(in.data(), in.size(), 1, best_simd_level());
  EXPECT_LT(double(encoded_size(in, plan)), 0.8 * double(encoded_size(in, dim1)));
}

TEST(MpcChunkPlan, PlansOutsideTheFormatAreNamed) {
  EXPECT_EQ(mpc_plan_problem({1, 0, 1, 0, 0}), "");
  EXPECT_EQ(mpc_plan_problem({32, ~0u, 32, 32 - kMaxBytePlanes, 32}), "");
  EXPECT_NE(mpc_plan_problem({33, 0, 1, 0, 0}).find("stride 33"), std::string::npos);
  EXPECT_NE(mpc_plan_problem({1, 0, 0, 0, 0}).find("first lagged plane 0"), std::string::npos);
  EXPECT_NE(mpc_plan_problem({1, 0, 33, 0, 0}).find("first lagged plane 33"), std::string::npos);
  EXPECT_NE(mpc_plan_problem({1, 0, 1, 5, 4}).find("out of order"), std::string::npos);
  EXPECT_NE(mpc_plan_problem({1, 0, 1, 0, 33}).find("out of order"), std::string::npos);
  EXPECT_NE(mpc_plan_problem({1, 0, 1, 0, kMaxBytePlanes + 1}).find("byte-eliminated"),
            std::string::npos);
}

TEST(MpcChunkPlan, WrittenPlanReadsBack) {
  std::mt19937_64 rng(cmpi::testing::test_seed() + 5);
  for (int i = 0; i < 100; ++i) {
    const MpcChunkPlan plan = random_plan(rng);
    uint8_t bytes[kMpcPlanBytes];
    write_mpc_plan(plan, bytes);
    EXPECT_TRUE(read_mpc_plan(bytes) == plan) << describe(plan);
  }
}

}  // namespace
}  // namespace cmpi::compress
