// The mpc codec: bit-exact round trips for every bit pattern, length, dim and
// SIMD level; compression where the data is smooth; identical bytes whatever
// the thread count or SIMD level; and DecodeError("body") for every kind of
// inconsistent body, never an out-of-bounds access (the Fuzz suite also runs
// under AddressSanitizer).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "compress/codec_registry.h"
#include "compress/mpc_chunk.h"
#include "compress/mpc_codec.h"
#include "tests/support/float_data.h"
#include "tests/support/test_seed.h"

namespace cmpi::compress {
namespace {

using cmpi::testing::from_bits;
using cmpi::testing::gaussian;
using cmpi::testing::smooth;

std::vector<float> random_bit_patterns(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = from_bits(static_cast<uint32_t>(rng()));
  return v;
}

// Every special class of float, repeated and mixed with random patterns.
std::vector<float> special_patterns(size_t n, uint64_t seed) {
  const uint32_t specials[] = {0x00000000u, 0x80000000u,               // +0, -0
                               0x00000001u, 0x807FFFFFu, 0x00400000u,  // denormals
                               0x00800000u, 0x7F7FFFFFu, 0xFF7FFFFFu,  // min normal, +-max
                               0x7F800000u, 0xFF800000u,               // +-inf
                               0x7FC00000u, 0xFFC00000u, 0x7FC12345u,
                               0xFFFFFFFFu,                            // quiet NaNs with payloads
                               0x7F800001u, 0x7FA00000u, 0xFF800001u,  // signalling NaNs
                               0x3F800000u, 0xBF800000u};
  std::mt19937_64 rng(seed);
  std::vector<float> v(n);
  const size_t nspecial = sizeof(specials) / sizeof(specials[0]);
  for (size_t i = 0; i < n; ++i)
    v[i] = rng() % 4 == 0 ? from_bits(static_cast<uint32_t>(rng()))
                          : from_bits(specials[rng() % nspecial]);
  return v;
}

std::unique_ptr<Codec> mpc(const std::string& params = "") {
  return make_codec(CodecSpec::parse(params.empty() ? "mpc" : "mpc:" + params));
}

void expect_bit_exact(Codec& codec, const std::vector<float>& in, const std::string& what) {
  auto bytes = codec.encode(in.data(), in.size());
  ASSERT_LE(bytes.size(), codec.max_encoded_bytes(in.size())) << what;
  std::vector<float> out(in.size(), 1.5f);
  codec.decode(bytes.data(), bytes.size(), out.data(), out.size());
  ASSERT_EQ(0, std::memcmp(in.data(), out.data(), 4 * in.size()))
      << what << " with " << codec.spec().to_string();
}

double ratio(Codec& codec, const std::vector<float>& in) {
  return double(4 * in.size()) / double(codec.encode(in.data(), in.size()).size());
}

std::vector<std::string> simd_settings() {
  std::vector<std::string> settings;
  for (SimdLevel level : {SimdLevel::kScalar, SimdLevel::kSsse3, SimdLevel::kAvx2})
    if (simd_level_supported(level))
      settings.push_back(std::string("simd=") + simd_level_name(level));
  return settings;
}

const size_t kLengths[] = {0, 1, 2, 31, 32, 33, 63, 64, 65, 1023, 1024, 4097, (1u << 20) + 3};

TEST(MpcCodec, SpecialBitPatternsRoundTripAtEveryLength) {
  const uint64_t seed = cmpi::testing::test_seed();
  for (const auto& simd : simd_settings()) {
    auto codec = mpc(simd);
    for (size_t n : kLengths)
      expect_bit_exact(*codec, special_patterns(n, seed + n), "specials n=" + std::to_string(n));
  }
}

TEST(MpcCodec, RandomBitPatternsRoundTripAndStayNearRawSize) {
  const uint64_t seed = cmpi::testing::test_seed() + 1;
  for (const auto& simd : simd_settings()) {
    auto codec = mpc(simd + ",chunk=1024");
    for (size_t n : kLengths) {
      auto in = random_bit_patterns(n, seed + n);
      expect_bit_exact(*codec, in, "random bits n=" + std::to_string(n));
      // Incompressible chunks are stored raw: only the chunk table is added.
      const size_t chunks = (n + 1023) / 1024;
      EXPECT_EQ(codec->encode(in.data(), n).size(), kPayloadHeaderBytes + 4 * chunks + 4 * n);
    }
  }
}

TEST(MpcCodec, GradientLikeDataRoundTripsAtEveryLength) {
  const uint64_t seed = cmpi::testing::test_seed() + 2;
  for (const auto& simd : simd_settings()) {
    auto codec = mpc(simd + ",chunk=4096");
    for (size_t n : kLengths)
      expect_bit_exact(*codec, gaussian(n, 1e-3f, seed + n), "gaussian n=" + std::to_string(n));
  }
}

TEST(MpcCodec, EveryDimRoundTripsAndCompressesSmoothData) {
  const uint64_t seed = cmpi::testing::test_seed() + 3;
  for (const auto& simd : simd_settings()) {
    for (int dim = 1; dim <= 32; ++dim) {
      auto codec = mpc(simd + ",chunk=512,dim=" + std::to_string(dim));
      for (size_t n : {size_t(dim) - 1, size_t(dim), size_t(1000 + dim), size_t(5000)}) {
        auto in = smooth(n, seed + n);
        expect_bit_exact(*codec, in, "smooth dim=" + std::to_string(dim));
        expect_bit_exact(*codec, special_patterns(n, seed + n), "specials");
      }
      auto in = smooth(20000, seed + dim);
      EXPECT_GT(ratio(*codec, in), 1.5) << "dim=" << dim << " " << simd;
    }
  }
}

TEST(MpcCodec, SmoothSignalCompresses) {
  auto in = smooth(1 << 18, cmpi::testing::test_seed() + 4);
  EXPECT_GT(ratio(*mpc(), in), 2.0);
  // Zeros (e.g. a gradient of frozen weights) cost a bitmap word per block.
  std::vector<float> zeros(1 << 16, 0.f);
  EXPECT_GT(ratio(*mpc(), zeros), 25.0);
}

TEST(MpcCodec, DimMatchingInterleavedComponentsCompressesBetter) {
  // Three interleaved components on different scales: only dim=3 predicts
  // each value from the same component.
  auto base = smooth(3 << 16, cmpi::testing::test_seed() + 5);
  std::vector<float> in(base.size());
  const float scale[3] = {1.f, 1000.f, -0.001f};
  for (size_t i = 0; i < in.size(); ++i) in[i] = base[i / 3 * 3] * scale[i % 3];
  EXPECT_GT(ratio(*mpc("dim=3"), in), 1.2 * ratio(*mpc("dim=1"), in));
  expect_bit_exact(*mpc("dim=3"), in, "interleaved");
}

TEST(MpcCodec, ThreadsAndSimdLevelDoNotChangeTheBytes) {
  const uint64_t seed = cmpi::testing::test_seed() + 6;
  for (size_t n : {size_t(1000), size_t(3 * 4096 + 17), (size_t(1) << 20) + 3}) {
    // Mixed data: some chunks compress, some are stored raw.
    auto in = gaussian(n, 1e-3f, seed + n);
    auto noise = random_bit_patterns(n / 3, seed + n + 1);
    std::copy(noise.begin(), noise.end(), in.begin() + n / 3);
    const auto reference = mpc("chunk=4096,threads=1,simd=scalar")->encode(in.data(), n);
    for (const std::string threads : {"1", "3", "0"}) {
      for (const auto& simd : simd_settings()) {
        auto codec = mpc("chunk=4096,threads=" + threads + "," + simd);
        EXPECT_EQ(codec->encode(in.data(), n), reference) << threads << " " << simd;
        std::vector<float> out(n);
        codec->decode(reference.data(), reference.size(), out.data(), n);
        ASSERT_EQ(0, std::memcmp(in.data(), out.data(), 4 * n)) << threads << " " << simd;
      }
    }
  }
}

TEST(MpcCodec, HeaderCarriesDimAndChunk) {
  auto in = smooth(777, cmpi::testing::test_seed() + 7);
  auto bytes = mpc("dim=2")->encode(in.data(), in.size());
  std::vector<float> out(in.size());
  for (const std::string other : {"dim=1", "dim=2,chunk=1024"}) {
    try {
      mpc(other)->decode(bytes.data(), bytes.size(), out.data(), out.size());
      FAIL() << other;
    } catch (const DecodeError& e) {
      EXPECT_EQ(e.field(), "params") << other;
    }
  }
  // threads and simd are not part of the format.
  mpc("dim=2,threads=2,simd=scalar")->decode(bytes.data(), bytes.size(), out.data(), out.size());
  EXPECT_EQ(0, std::memcmp(in.data(), out.data(), 4 * in.size()));
}

TEST(MpcCodec, BadSpecNamesTheParameter) {
  for (const auto& [params, name] :
       std::vector<std::pair<std::string, std::string>>{{"dim=0", "dim"},
                                                        {"dim=33", "dim"},
                                                        {"chunk=33", "chunk"},
                                                        {"chunk=0", "chunk"},
                                                        {"chunk=1073741824", "chunk"},
                                                        {"threads=-1", "threads"},
                                                        {"simd=sse9", "simd"},
                                                        {"level=3", "level"}}) {
    try {
      mpc(params);
      FAIL() << params;
    } catch (const CodecError& e) {
      EXPECT_NE(std::string(e.what()).find("'" + name + "'"), std::string::npos) << e.what();
    }
  }
}

// --- corrupted bodies -------------------------------------------------------

std::vector<uint8_t> body_of(const std::vector<uint8_t>& payload) {
  return {payload.begin() + kPayloadHeaderBytes, payload.end()};
}

// The payload with its body replaced and a valid header, so that only the
// body's own checks can reject it.
std::vector<uint8_t> with_body(const std::vector<uint8_t>& payload,
                               const std::vector<uint8_t>& body) {
  PayloadHeader header = read_payload_header(payload.data(), payload.size());
  header.body_bytes = body.size();
  std::vector<uint8_t> out(kPayloadHeaderBytes);
  write_payload_header(header, out.data());
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

uint32_t get_u32(const std::vector<uint8_t>& bytes, size_t offset) {
  uint32_t v;
  std::memcpy(&v, bytes.data() + offset, 4);
  return v;
}

void put_u32(std::vector<uint8_t>& bytes, size_t offset, uint32_t v) {
  std::memcpy(bytes.data() + offset, &v, 4);
}

// The message of the DecodeError decoding throws; fails if it throws none
// or names another field than "body".
std::string body_error(const Codec& codec, const std::vector<uint8_t>& payload, size_t n) {
  std::vector<float> out(n);
  try {
    codec.decode(payload.data(), payload.size(), out.data(), n);
  } catch (const DecodeError& e) {
    EXPECT_EQ(e.field(), "body") << e.what();
    return e.what();
  }
  ADD_FAILURE() << "corrupted body decoded without error";
  return "";
}

// A body made by hand from chunks with a plan each, so that the tests know
// where every field is: two chunks of 256 floats and one of 100 (a partial
// last block), all compressed.
class MpcCorruptBody : public ::testing::Test {
 protected:
  const size_t n_ = 612;
  std::unique_ptr<Codec> codec_ = mpc("chunk=256");
  std::vector<float> in_ = smooth(n_, cmpi::testing::test_seed() + 8);
  // Plain MPC; no differencing, a reference word, byte planes [23, 27)
  // (21 presence bits per block); stride 2 with plane 0 stored whole (31
  // presence bits per block, so 4 unused bits after the chunk's 4 blocks).
  const MpcChunkPlan plans_[3] = {{1, 0, 1, 0, 0}, {0, 0x40000000u, 28, 23, 27}, {2, 0, 1, 1, 1}};
  std::vector<uint8_t> good_ = codec_->encode(in_.data(), n_);  // for its header
  std::vector<uint8_t> body_;
  const size_t table_bytes_ = 12;

  size_t chunk_offset(size_t c) const {
    size_t offset = table_bytes_;
    for (size_t i = 0; i < c; ++i) offset += get_u32(body_, 4 * i);
    return offset;
  }

  // Chunks 1 and 2 are one group each: its top word plane byte follows the
  // plan, then its presence bits.
  size_t top_at(size_t c) const { return chunk_offset(c) + kMpcPlanBytes; }
  size_t presence_bits(size_t c) const {
    const MpcChunkPlan& plan = plans_[c];
    const size_t blocks = (std::min<size_t>(256, n_ - 256 * c) + 31) / 32;
    return blocks * ((body_[top_at(c)] - plan.first_word_plane) +
                     4 * (plan.first_word_plane - plan.first_byte_plane));
  }

  void SetUp() override {
    body_.resize(table_bytes_);
    for (size_t c = 0; c < 3; ++c) {
      const size_t words = std::min<size_t>(256, n_ - 256 * c);
      std::vector<uint8_t> chunk(mpc_max_chunk_bytes(words));
      const size_t size = mpc_encode_chunk_with_plan(in_.data() + 256 * c, words, plans_[c],
                                                     chunk.data(), best_simd_level());
      ASSERT_LT(size, 4 * words) << "chunk " << c;
      put_u32(body_, 4 * c, static_cast<uint32_t>(size));
      body_.insert(body_.end(), chunk.begin(), chunk.begin() + size);
    }
    std::vector<float> out(n_);
    codec_->decode(with_body(good_, body_).data(), kPayloadHeaderBytes + body_.size(), out.data(),
                   n_);
    ASSERT_EQ(0, std::memcmp(in_.data(), out.data(), 4 * n_));
  }
};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_F(MpcCorruptBody, BodyShorterThanChunkTable) {
  EXPECT_TRUE(contains(body_error(*codec_, with_body(good_, {1, 2, 3, 4, 5}), n_), "chunk table"));
}

TEST_F(MpcCorruptBody, ChunkLargerThanRaw) {
  auto body = body_;
  put_u32(body, 4, 4 * 256 + 4);
  EXPECT_TRUE(contains(body_error(*codec_, with_body(good_, body), n_), "chunk 1 claims"));
}

TEST_F(MpcCorruptBody, ChunkTableDisagreesWithBodySize) {
  auto body = body_;
  put_u32(body, 0, get_u32(body, 0) - 4);
  EXPECT_TRUE(contains(body_error(*codec_, with_body(good_, body), n_), "accounts for"));
  body = body_;
  body.push_back(0);
  EXPECT_TRUE(contains(body_error(*codec_, with_body(good_, body), n_), "accounts for"));
}

TEST_F(MpcCorruptBody, BytesMovedBetweenChunks) {
  // Move two bytes from chunk 0 to chunk 1: the total still matches.
  auto body = body_;
  put_u32(body, 0, get_u32(body, 0) - 2);
  put_u32(body, 4, get_u32(body, 4) + 2);
  EXPECT_TRUE(contains(body_error(*codec_, with_body(good_, body), n_), "mpc chunk 0"));
}

TEST_F(MpcCorruptBody, EveryPresenceBitFlipIsCaught) {
  // A flipped presence bit marks one word or byte more or less than the
  // chunk holds, or sets an unused bit: the groups no longer fill the chunk
  // (unless the words shifted onto the last block's padding first).
  for (size_t c : {1u, 2u}) {
    const size_t presence_bytes = (presence_bits(c) + 7) / 8;
    ASSERT_GT(presence_bytes, 0u);
    for (size_t bit = 0; bit < 8 * presence_bytes; ++bit) {
      auto body = body_;
      body[top_at(c) + 1 + bit / 8] ^= uint8_t(1u << (bit % 8));
      const std::string error = body_error(*codec_, with_body(good_, body), n_);
      EXPECT_TRUE(contains(error, "mpc chunk " + std::to_string(c) + ":")) << error;
      EXPECT_TRUE(contains(error, " mark ") || contains(error, "follow the last block") ||
                  contains(error, "unused presence bits") || contains(error, "padding"))
          << "chunk " << c << " bit " << bit << ": " << error;
    }
  }
}

TEST_F(MpcCorruptBody, UnusedPresenceBitsMustBeZero) {
  // Chunk 2: 4 blocks of 31 presence bits, 4 unused bits in its 16th byte.
  ASSERT_EQ(body_[top_at(2)], 32u);
  ASSERT_EQ(presence_bits(2), 124u);
  auto body = body_;
  body[top_at(2) + 1 + 15] |= 0x80;
  EXPECT_TRUE(contains(body_error(*codec_, with_body(good_, body), n_), "unused presence bits"));
}

TEST_F(MpcCorruptBody, TopWordPlaneOutsideItsRange) {
  // Chunk 2's word planes start at 1; a top word plane is at most 32.
  for (uint8_t top : {0, 33, 255}) {
    auto body = body_;
    body[top_at(2)] = top;
    EXPECT_TRUE(contains(body_error(*codec_, with_body(good_, body), n_),
                         "top word plane " + std::to_string(top)));
  }
}

TEST_F(MpcCorruptBody, BytesAfterTheLastBlock) {
  auto body = body_;
  body.insert(body.end(), {0, 0, 0, 0});
  put_u32(body, 8, get_u32(body, 8) + 4);
  EXPECT_TRUE(contains(body_error(*codec_, with_body(good_, body), n_), "follow the last block"));
}

TEST_F(MpcCorruptBody, ChunkTooSmallForItsPlan) {
  // Chunk 2 shrunk to 4 bytes, the body cut to match.
  auto body = body_;
  body.resize(chunk_offset(2) + 4);
  put_u32(body, 8, 4);
  EXPECT_TRUE(contains(body_error(*codec_, with_body(good_, body), n_), "8-byte plan"));
}

TEST_F(MpcCorruptBody, PlanFieldsOutsideTheFormat) {
  // Byte offsets in the plan: 0 stride, 1 first lagged, 2 first byte plane,
  // 3 first word plane.
  const std::vector<std::tuple<size_t, uint8_t, std::string>> cases = {
      {0, 33, "stride 33"},          {1, 0, "first lagged plane 0"},
      {1, 33, "first lagged plane"}, {2, 5, "out of order"},  // 5 > first word plane 0
      {3, 33, "out of order"},       {3, 11, "11 byte-eliminated planes"}};
  for (const auto& [offset, value, message] : cases) {
    auto body = body_;
    body[chunk_offset(0) + offset] = value;
    const std::string error = body_error(*codec_, with_body(good_, body), n_);
    EXPECT_TRUE(contains(error, "mpc chunk 0: plan: ") && contains(error, message))
        << offset << " = " << int(value) << ": " << error;
  }
}

TEST_F(MpcCorruptBody, NonzeroPaddingInTheLastBlock) {
  // Chunk 2's last block holds 4 floats and 28 zero-padding words, and the
  // chunk ends with a word of that block. Setting its top bit makes bit 31
  // of the padded words' prefix sums nonzero, which no encoder produces.
  auto body = body_;
  const size_t last_word = body.size() - 4;
  put_u32(body, last_word, get_u32(body, last_word) ^ 0x80000000u);
  EXPECT_TRUE(contains(body_error(*codec_, with_body(good_, body), n_), "padding"));
}

TEST_F(MpcCorruptBody, NonzeroFlagsAreRejected) {
  PayloadHeader header = read_payload_header(good_.data(), good_.size());
  header.flags = 1;
  auto bad = good_;
  write_payload_header(header, bad.data());
  std::vector<float> out(n_);
  try {
    codec_->decode(bad.data(), bad.size(), out.data(), n_);
    FAIL();
  } catch (const DecodeError& e) {
    EXPECT_EQ(e.field(), "flags");
  }
}

TEST_F(MpcCorruptBody, ParallelDecodeReportsTheFirstBadChunk) {
  auto body = body_;
  for (size_t c : {1u, 2u}) body[chunk_offset(c)] = 200;  // stride
  auto parallel = mpc("chunk=256,threads=3");
  EXPECT_TRUE(contains(body_error(*parallel, with_body(good_, body), n_), "mpc chunk 1: plan"));
}

// Random damage to valid bodies (header kept valid): decoding either
// succeeds or throws DecodeError("body"); under AddressSanitizer this also
// shows that no byte outside the payload or the output is touched.
TEST(MpcCodecFuzz, MutatedBodiesDecodeOrThrowBodyErrors) {
  const uint64_t seed = cmpi::testing::test_seed() + 9;
  std::mt19937_64 rng(seed);
  // Every SIMD level on one thread with small chunks of one group each; chunks
  // of several groups with every stride tried (dim=auto); the parallel decode
  // path less often, as OpenMP regions are slow on a loaded machine. Data:
  // smooth (differenced plans), gradient-like (plain MPC planes) and
  // activation-like noise (no differencing, byte-eliminated planes).
  struct Setting {
    std::string spec;
    int trials;
    size_t max_n;
  };
  std::vector<Setting> settings;
  for (const auto& simd : simd_settings())
    settings.push_back({"chunk=128,threads=1," + simd, 300, 700});
  settings.push_back({"chunk=4096,dim=auto,threads=1", 60, 9000});
  settings.push_back({"chunk=128,threads=2", 60, 700});
  for (const auto& [setting, trials, max_n] : settings) {
    auto codec = mpc(setting);
    for (int trial = 0; trial < trials; ++trial) {
      const size_t n = rng() % max_n;
      auto in = trial % 3 == 0   ? smooth(n, rng())
                : trial % 3 == 1 ? gaussian(n, 1e-3f, rng())
                                 : gaussian(n, 0.1f, rng());
      auto good = codec->encode(in.data(), n);
      auto body = body_of(good);
      switch (rng() % 4) {
        case 0:  // flip bits
          for (int k = 0, flips = 1 + int(rng() % 4); k < flips && !body.empty(); ++k)
            body[rng() % body.size()] ^= uint8_t(1u << (rng() % 8));
          break;
        case 1:  // truncate
          body.resize(body.empty() ? 0 : rng() % body.size());
          break;
        case 2:  // append
          for (int k = 0, extra = 1 + int(rng() % 40); k < extra; ++k)
            body.push_back(uint8_t(rng()));
          break;
        default:  // random body of a plausible size
          for (auto& byte : body) byte = uint8_t(rng());
          break;
      }
      auto payload = with_body(good, body);
      // An exactly sized heap copy, so that ASan sees any over-read.
      std::unique_ptr<uint8_t[]> exact(new uint8_t[payload.size()]);
      std::memcpy(exact.get(), payload.data(), payload.size());
      std::unique_ptr<float[]> out(new float[n]);
      try {
        codec->decode(exact.get(), payload.size(), out.get(), n);
      } catch (const DecodeError& e) {
        ASSERT_EQ(e.field(), "body") << e.what();
      }
    }
  }
}

}  // namespace
}  // namespace cmpi::compress
