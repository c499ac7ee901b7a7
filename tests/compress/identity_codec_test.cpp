// The payload header and the identity codec: round trip, and that decode
// names the header field at fault for each kind of bad payload.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "compress/codec_registry.h"
#include "tests/support/float_data.h"
#include "tests/support/test_seed.h"

namespace cmpi::compress {
namespace {

std::string decode_error_field(const Codec& codec, const std::vector<uint8_t>& bytes, size_t n) {
  std::vector<float> out(n);
  try {
    codec.decode(bytes.data(), bytes.size(), out.data(), n);
  } catch (const DecodeError& e) {
    return e.field();
  }
  return "";
}

TEST(IdentityCodec, RoundTripIsBitExact) {
  auto codec = make_codec(CodecSpec("identity"));
  for (size_t n : {0, 1, 7, 1023, 100003}) {
    auto in = cmpi::testing::gaussian(n, 1.f, cmpi::testing::test_seed() + n);
    auto bytes = codec->encode(in.data(), n);
    EXPECT_EQ(bytes.size(), kPayloadHeaderBytes + 4 * n);
    std::vector<float> out(n);
    codec->decode(bytes.data(), bytes.size(), out.data(), n);
    EXPECT_EQ(0, std::memcmp(in.data(), out.data(), 4 * n)) << "n=" << n;
  }
}

TEST(IdentityCodec, DecodeNamesTheBadField) {
  auto codec = make_codec(CodecSpec("identity"));
  auto in = cmpi::testing::gaussian(64, 1.f, cmpi::testing::test_seed());
  auto good = codec->encode(in.data(), in.size());

  auto truncated = good;
  truncated.resize(20);
  EXPECT_EQ(decode_error_field(*codec, truncated, 64), "header");
  auto bad_magic = good;
  bad_magic[0] ^= 1;
  EXPECT_EQ(decode_error_field(*codec, bad_magic, 64), "magic");
  auto bad_count = good;
  bad_count[24] ^= 1;  // element_count, without fixing the checksum
  EXPECT_EQ(decode_error_field(*codec, bad_count, 64), "checksum");
  EXPECT_EQ(decode_error_field(*codec, good, 63), "element_count");
  auto short_body = good;
  short_body.pop_back();
  EXPECT_EQ(decode_error_field(*codec, short_body, 64), "body_bytes");
}

TEST(CodecRegistry, UnknownCodecAndParameterAreNamed) {
  try {
    make_codec(CodecSpec("zip"));
    FAIL();
  } catch (const CodecError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown codec 'zip'"), std::string::npos);
  }
  try {
    make_codec(CodecSpec("identity", {{"rate", "8"}}));
    FAIL();
  } catch (const CodecError& e) {
    EXPECT_NE(std::string(e.what()).find("'rate' is unknown"), std::string::npos);
  }
}

}  // namespace
}  // namespace cmpi::compress
