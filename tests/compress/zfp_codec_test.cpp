// zfp codec: each mode against the error bound it documents, chunking and
// threads (same bytes and floats whatever the thread count), non-finite
// input (raw chunks or a named failure), parameter validation, and decode
// of chunk tables and streams that do not add up.
//
// Measured on Gaussian data (n = 2^20): relative RMSE in rate mode is
// 13.8 * 2^-rate for rates 5..26 (0.97 at rate 4, 0.055 at rate 8); precision
// mode's worst error is 10 * 2^(e-P) for P <= 27 (2^(e-24) above that);
// accuracy mode's worst error is 0.4..0.75 of the tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include <zfp.h>

#include "compress/byte_order.h"
#include "compress/codec_registry.h"
#include "compress/zfp_codec.h"
#include "tests/support/test_seed.h"

namespace cmpi::compress {
namespace {

std::vector<float> gaussian(size_t n, uint64_t seed, float scale = 1.f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

std::unique_ptr<Codec> zfp(const std::string& params) {
  return make_codec(CodecSpec::parse("zfp:" + params));
}

std::vector<float> round_trip(const Codec& encoder, const std::vector<float>& in,
                              std::vector<uint8_t>* bytes_out = nullptr) {
  auto& codec = const_cast<Codec&>(encoder);
  auto bytes = codec.encode(in.data(), in.size());
  std::vector<float> out(in.size());
  codec.decode(bytes.data(), bytes.size(), out.data(), out.size());
  if (bytes_out) *bytes_out = std::move(bytes);
  return out;
}

double max_abs_error(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(double(a[i]) - b[i]));
  return worst;
}

double relative_rmse(const std::vector<float>& a, const std::vector<float>& b) {
  double err = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    err += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    norm += double(a[i]) * a[i];
  }
  return std::sqrt(err / norm);
}

bool bit_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), 4 * a.size()) == 0;
}

uint32_t chunk_entry(const std::vector<uint8_t>& payload, size_t k) {
  return load_le32(&payload[kPayloadHeaderBytes + 4 * k]);
}

void set_chunk_entry(std::vector<uint8_t>& payload, size_t k, uint32_t v) {
  store_le32(&payload[kPayloadHeaderBytes + 4 * k], v);
}

// Rewrites the header so that it matches a body of the payload's new size,
// with a valid checksum: what a corrupted body behind an intact header is.
void reseal(std::vector<uint8_t>& payload) {
  PayloadHeader header;
  header.codec = static_cast<CodecId>(payload[5]);
  header.flags = load_le16(&payload[6]);
  for (size_t i = 0; i < 4; ++i) header.params[i] = load_le32(&payload[8 + 4 * i]);
  header.element_count = load_le64(&payload[24]);
  header.body_bytes = payload.size() - kPayloadHeaderBytes;
  write_payload_header(header, payload.data());
}

std::string decode_failure(const Codec& codec, const std::vector<uint8_t>& payload, size_t n) {
  std::vector<float> out(n);
  try {
    codec.decode(payload.data(), payload.size(), out.data(), n);
  } catch (const DecodeError& e) {
    return e.what();
  }
  return "";
}

TEST(ZfpCodec, AccuracyModeStaysWithinTolerance) {
  const uint64_t seed = cmpi::testing::test_seed();
  for (double tolerance : {1e-1, 1e-2, 1e-3, 1e-4, 1e-5}) {
    for (float scale : {1.f, 30.f}) {
      auto in = gaussian(100003, seed + size_t(1e6 * tolerance) + size_t(scale), scale);
      auto codec = zfp("mode=accuracy,chunk=4096,threads=2,tolerance=" + std::to_string(tolerance));
      std::vector<uint8_t> bytes;
      auto out = round_trip(*codec, in, &bytes);
      EXPECT_LE(max_abs_error(in, out), tolerance)
          << "tolerance " << tolerance << " scale " << scale;
      EXPECT_LT(bytes.size(), 4 * in.size()) << "tolerance " << tolerance;
    }
  }
}

TEST(ZfpCodec, ReversibleModeIsBitExactForEveryFloatClass) {
  std::mt19937_64 rng(cmpi::testing::test_seed());
  auto in = gaussian(50001, rng());
  const float specials[] = {0.f,
                            -0.f,
                            std::numeric_limits<float>::denorm_min(),
                            -std::numeric_limits<float>::denorm_min(),
                            std::numeric_limits<float>::min(),
                            std::numeric_limits<float>::max(),
                            -std::numeric_limits<float>::max(),
                            1e-40f,
                            -3e-39f};
  for (size_t i = 0; i < in.size(); i += 97) in[i] = specials[(i / 97) % 9];
  // Random bit patterns of finite floats: every exponent and sign.
  for (size_t i = 20000; i < 30000; ++i) {
    uint32_t bits = uint32_t(rng());
    if ((bits & 0x7f800000u) == 0x7f800000u) bits &= ~0x00800000u;
    std::memcpy(&in[i], &bits, 4);
  }
  for (const char* threads : {"1", "3"}) {
    auto codec = zfp(std::string("mode=reversible,chunk=1000,threads=") + threads);
    EXPECT_TRUE(codec->lossless());
    EXPECT_TRUE(bit_equal(in, round_trip(*codec, in))) << "threads " << threads;
  }
}

TEST(ZfpCodec, ReversibleWithRawNonFiniteChunksIsBitExactForAnyBits) {
  std::mt19937_64 rng(cmpi::testing::test_seed());
  std::vector<float> in(8192);
  for (auto& x : in) {
    uint32_t bits = uint32_t(rng());
    std::memcpy(&x, &bits, 4);
  }
  auto codec = zfp("mode=reversible,chunk=512");
  EXPECT_TRUE(bit_equal(in, round_trip(*codec, in)));
}

TEST(ZfpCodec, RateModeErrorShrinksWithRate) {
  auto in = gaussian(1 << 18, cmpi::testing::test_seed());
  double previous = std::numeric_limits<double>::infinity();
  for (int rate = 4; rate <= 24; ++rate) {
    auto codec = zfp("mode=rate,threads=2,rate=" + std::to_string(rate));
    std::vector<uint8_t> bytes;
    const double error = relative_rmse(in, round_trip(*codec, in, &bytes));
    EXPECT_LT(error, previous) << "rate " << rate;
    // Measured 13.8 * 2^-rate (15.5 at rate 4); 20 leaves a margin.
    EXPECT_LE(error, 20.0 * std::ldexp(1.0, -rate)) << "rate " << rate;
    // Fixed rate: rate bits per value plus the chunk table and header.
    const double bits_per_value = 8.0 * (bytes.size() - kPayloadHeaderBytes) / in.size();
    EXPECT_NEAR(bits_per_value, rate, 0.01) << "rate " << rate;
    previous = error;
  }
}

TEST(ZfpCodec, PrecisionModeErrorIsBoundedByBlockMagnitude) {
  auto in = gaussian(1 << 16, cmpi::testing::test_seed(), 5.f);
  for (int precision : {2, 6, 12, 20, 27, 30}) {
    auto out = round_trip(*zfp("mode=precision,precision=" + std::to_string(precision)), in);
    for (size_t block = 0; block < in.size(); block += 4) {
      float largest = 0;
      for (size_t j = block; j < block + 4; ++j) largest = std::max(largest, std::fabs(in[j]));
      int e = 0;
      std::frexp(largest, &e);  // 2^(e-1) <= largest < 2^e
      const double bound = std::max(std::ldexp(1.0, e - precision + 4), std::ldexp(1.0, e - 23));
      for (size_t j = block; j < block + 4; ++j)
        ASSERT_LE(std::fabs(double(in[j]) - out[j]), bound)
            << "precision " << precision << " index " << j;
    }
  }
}

TEST(ZfpCodec, ChunkBoundariesAndThreadCountsGiveTheSameBytes) {
  const uint64_t seed = cmpi::testing::test_seed();
  for (size_t n : {size_t(0), size_t(1), size_t(3), size_t(4), size_t(5), size_t(1023),
                   size_t(1024), size_t(1025), size_t(10000)}) {
    auto in = gaussian(n, seed + n);
    auto one = zfp("mode=accuracy,tolerance=1e-3,chunk=1024,threads=1");
    auto four = zfp("mode=accuracy,tolerance=1e-3,chunk=1024,threads=4");
    auto all = zfp("mode=accuracy,tolerance=1e-3,chunk=1024,threads=0");
    EXPECT_GE(dynamic_cast<ZfpCodec&>(*all).threads(), 1);
    auto bytes = one->encode(in.data(), n);
    EXPECT_EQ(bytes, four->encode(in.data(), n)) << "n=" << n;
    EXPECT_EQ(bytes, all->encode(in.data(), n)) << "n=" << n;
    std::vector<float> serial(n), parallel(n);
    one->decode(bytes.data(), bytes.size(), serial.data(), n);
    four->decode(bytes.data(), bytes.size(), parallel.data(), n);
    EXPECT_TRUE(bit_equal(serial, parallel)) << "n=" << n;
    EXPECT_LE(max_abs_error(in, serial), 1e-3) << "n=" << n;
  }
}

TEST(ZfpCodec, NonFiniteChunkIsSentRawAndTheRestCompressed) {
  auto in = gaussian(4096 * 4, cmpi::testing::test_seed());
  in[4096 + 17] = std::numeric_limits<float>::quiet_NaN();
  in[3 * 4096 + 5] = -std::numeric_limits<float>::infinity();
  auto codec = zfp("mode=accuracy,tolerance=1e-2,chunk=4096,threads=2");
  std::vector<uint8_t> bytes;
  auto out = round_trip(*codec, in, &bytes);
  for (size_t k = 0; k < 4; ++k) {
    const bool raw = (chunk_entry(bytes, k) & 0x80000000u) != 0;
    EXPECT_EQ(raw, k == 1 || k == 3) << "chunk " << k;
    std::vector<float> a(in.begin() + 4096 * k, in.begin() + 4096 * (k + 1));
    std::vector<float> b(out.begin() + 4096 * k, out.begin() + 4096 * (k + 1));
    if (raw)
      EXPECT_TRUE(bit_equal(a, b)) << "chunk " << k;
    else
      EXPECT_LE(max_abs_error(a, b), 1e-2) << "chunk " << k;
  }
  EXPECT_LT(bytes.size(), 4 * in.size() * 3 / 4);
}

// Only chunks sent raw because of NaN/Inf count, cumulatively over encodes;
// a chunk raw because zfp would not shrink it (rate 32) does not.
TEST(ZfpCodec, CountsTheChunksSentRawBecauseOfNonFiniteValues) {
  auto in = gaussian(4096 * 4, cmpi::testing::test_seed());
  auto codec = zfp("mode=rate,rate=8,chunk=4096,threads=2");
  codec->encode(in.data(), in.size());
  EXPECT_EQ(codec->nonfinite_raw_chunks(), 0u);
  in[4096 + 17] = std::numeric_limits<float>::quiet_NaN();
  codec->encode(in.data(), in.size());
  EXPECT_EQ(codec->nonfinite_raw_chunks(), 1u);
  in[3 * 4096] = std::numeric_limits<float>::infinity();
  in[3 * 4096 + 1] = std::numeric_limits<float>::quiet_NaN();
  codec->encode(in.data(), in.size());
  EXPECT_EQ(codec->nonfinite_raw_chunks(), 3u) << "1 before + chunks 1 and 3";

  auto incompressible = zfp("mode=rate,rate=32,chunk=4096");
  std::vector<uint8_t> bytes = incompressible->encode(in.data(), 4096);
  EXPECT_NE(chunk_entry(bytes, 0) & 0x80000000u, 0u) << "rate 32 is sent raw";
  EXPECT_EQ(incompressible->nonfinite_raw_chunks(), 0u);
}

TEST(ZfpCodec, NonFiniteFailNamesTheFirstBadIndex) {
  auto in = gaussian(10000, cmpi::testing::test_seed());
  in[7777] = std::numeric_limits<float>::infinity();
  in[2345] = std::numeric_limits<float>::quiet_NaN();
  auto codec = zfp("mode=rate,rate=8,chunk=1000,threads=2,nonfinite=fail");
  try {
    codec->encode(in.data(), in.size());
    FAIL() << "encode accepted NaN with nonfinite=fail";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("index 2345"), std::string::npos) << e.what();
  }
}

TEST(ZfpCodec, ParametersAreValidatedByName) {
  const std::pair<const char*, const char*> bad[] = {
      {"mode=rate,rate=0", "'rate'"},
      {"mode=rate,rate=32.5", "'rate'"},
      {"mode=rate,rate=-4", "'rate'"},
      {"mode=rate,rate=nan", "'rate'"},
      {"mode=rate,rate=fast", "'rate'"},
      {"mode=precision,precision=0", "'precision'"},
      {"mode=precision,precision=33", "'precision'"},
      {"mode=precision", "'precision'"},
      {"mode=accuracy,tolerance=0", "'tolerance'"},
      {"mode=accuracy,tolerance=-1e-3", "'tolerance'"},
      {"mode=accuracy,tolerance=inf", "'tolerance'"},
      {"mode=accuracy", "'tolerance'"},
      {"mode=rate,tolerance=1e-3", "'tolerance'"},
      {"mode=reversible,rate=8", "'rate'"},
      {"mode=lossy", "'mode'"},
      {"chunk=0", "'chunk'"},
      {"chunk=100000000", "'chunk'"},
      {"threads=-1", "'threads'"},
      {"nonfinite=skip", "'nonfinite'"},
      {"level=3", "'level'"},
      {"impl=fast", "'impl'"},
      {"mode=accuracy,tolerance=1e-3,impl=native", "'impl'"},
      {"mode=precision,precision=8,impl=native", "'impl'"},
      {"mode=reversible,impl=native", "'impl'"},
  };
  for (const auto& [params, name] : bad) {
    try {
      zfp(params);
      ADD_FAILURE() << params << " was accepted";
    } catch (const CodecError& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << params << ": " << e.what();
    }
  }
  EXPECT_FALSE(make_codec(CodecSpec("zfp"))->lossless());  // default: rate 16
  // impl: native by default in mode rate only; libzfp is accepted everywhere.
  EXPECT_TRUE(dynamic_cast<ZfpCodec&>(*zfp("mode=rate,rate=8")).native());
  EXPECT_FALSE(dynamic_cast<ZfpCodec&>(*zfp("mode=rate,rate=8,impl=libzfp")).native());
  EXPECT_FALSE(dynamic_cast<ZfpCodec&>(*zfp("mode=accuracy,tolerance=1e-3")).native());
  EXPECT_NO_THROW(zfp("mode=reversible,impl=libzfp"));
}

// impl is a local choice: native and libzfp write the same payload bytes and
// each decodes the other's payloads to the same floats, raw (NaN/Inf) chunks,
// zero chunks and short last chunks included.
TEST(ZfpCodec, NativeAndLibzfpPayloadsInterchange) {
  const uint64_t seed = cmpi::testing::test_seed();
  auto in = gaussian(20003, seed, 0.01f);
  for (size_t i = 7000; i < 7100; ++i) in[i] = 0.f;
  in[12345] = std::numeric_limits<float>::quiet_NaN();
  in[15000] = -std::numeric_limits<float>::infinity();
  for (const char* rate : {"2.25", "7.5", "8", "16", "31.75", "32"}) {
    for (const char* chunk : {"1000", "4093", "65536"}) {
      const std::string params =
          std::string("mode=rate,threads=2,rate=") + rate + ",chunk=" + chunk + ",impl=";
      auto native = zfp(params + "native");
      auto libzfp = zfp(params + "libzfp");
      const auto native_bytes = native->encode(in.data(), in.size());
      const auto libzfp_bytes = libzfp->encode(in.data(), in.size());
      ASSERT_EQ(native_bytes, libzfp_bytes) << params << " seed " << seed;
      std::vector<float> by_native(in.size()), by_libzfp(in.size());
      native->decode(libzfp_bytes.data(), libzfp_bytes.size(), by_native.data(), in.size());
      libzfp->decode(native_bytes.data(), native_bytes.size(), by_libzfp.data(), in.size());
      ASSERT_EQ(std::memcmp(by_native.data(), by_libzfp.data(), 4 * in.size()), 0)
          << params << " seed " << seed;
      EXPECT_TRUE(std::isnan(by_native[12345])) << params;
      EXPECT_EQ(by_native[15000], in[15000]) << params;
    }
  }
}

TEST(ZfpCodec, DecoderWithOtherSettingsRejectsThePayload) {
  auto in = gaussian(5000, cmpi::testing::test_seed());
  auto bytes = zfp("mode=rate,rate=8")->encode(in.data(), in.size());
  for (const char* other : {"mode=rate,rate=16", "mode=rate,rate=8,chunk=1024",
                            "mode=accuracy,tolerance=1e-3", "mode=reversible"}) {
    const std::string failure = decode_failure(*zfp(other), bytes, in.size());
    EXPECT_NE(failure.find("params"), std::string::npos) << other << ": " << failure;
  }
  // Threads and nonfinite do not change the stream: any decoder accepts it.
  EXPECT_EQ(decode_failure(*zfp("mode=rate,rate=8,threads=3,nonfinite=fail"), bytes, in.size()),
            "");
}

TEST(ZfpCodec, DecodeRejectsChunkTablesThatDoNotAddUp) {
  auto in = gaussian(4000, cmpi::testing::test_seed());
  auto codec = zfp("mode=accuracy,tolerance=1e-3,chunk=1000");
  const auto good = codec->encode(in.data(), in.size());
  ASSERT_EQ(decode_failure(*codec, good, in.size()), "");
  const uint32_t first = chunk_entry(good, 0);
  ASSERT_EQ(first & 0x80000000u, 0u);

  auto expect_body_error = [&](std::vector<uint8_t> payload, const char* what) {
    reseal(payload);
    const std::string failure = decode_failure(*codec, payload, in.size());
    EXPECT_NE(failure.find("decode: body"), std::string::npos) << failure;
    EXPECT_NE(failure.find(what), std::string::npos) << failure;
  };
  // A stream one libzfp word longer than libzfp consumes.
  const size_t word = stream_alignment() / 8;
  auto grown = good;
  set_chunk_entry(grown, 0, uint32_t(first + word));
  grown.insert(grown.begin() + long(kPayloadHeaderBytes + 16 + first), word, uint8_t(0));
  expect_body_error(grown, "libzfp consumed");
  auto shrunk = good;  // sizes no longer add up to the body
  set_chunk_entry(shrunk, 0, uint32_t(first - word));
  expect_body_error(shrunk, "chunks end at byte");
  auto raw_wrong = good;  // a raw chunk must hold exactly 4 bytes per float
  set_chunk_entry(raw_wrong, 0, 0x80000000u | first);
  expect_body_error(raw_wrong, "raw chunk of");
  auto too_big = good;  // a zfp stream is always smaller than the raw chunk
  set_chunk_entry(too_big, 1, 4000);
  expect_body_error(too_big, "smaller than the raw");
  auto huge = good;
  set_chunk_entry(huge, 2, 0x80000000u | 4000);
  huge.resize(huge.size() - 1);
  expect_body_error(huge, "ends past the body");
  auto table_only = good;
  table_only.resize(kPayloadHeaderBytes + 12);
  expect_body_error(table_only, "chunk table of 4 chunks");
  auto empty = good;
  empty.resize(kPayloadHeaderBytes);
  expect_body_error(empty, "chunk table of 4 chunks");

  // Fixed rate: a zfp chunk has exactly one valid size.
  auto rate_codec = zfp("mode=rate,rate=8,chunk=1000");
  auto rate_bytes = rate_codec->encode(in.data(), in.size());
  const uint32_t rate_first = chunk_entry(rate_bytes, 0);
  set_chunk_entry(rate_bytes, 0, rate_first - 1);
  rate_bytes.erase(rate_bytes.begin() + kPayloadHeaderBytes + 16);
  reseal(rate_bytes);
  const std::string failure = decode_failure(*rate_codec, rate_bytes, in.size());
  EXPECT_NE(failure.find("fixed-rate"), std::string::npos) << failure;
}

}  // namespace
}  // namespace cmpi::compress
