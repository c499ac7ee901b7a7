// The tensor file header (io/tensor_file.h): its bytes are the documented
// layout, it reads back as written, a file without the magic is not a tensor
// file, and a header this version does not read is refused naming the file.
#include "io/tensor_file.h"

#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <string>

namespace cmpi::io {
namespace {

TEST(TensorFile, HeaderBytesAreTheDocumentedLayout) {
  TensorHeader header;
  header.shape = {3, 5};
  const std::string bytes = encode_tensor_header(header);
  ASSERT_EQ(bytes.size(), 36u);
  EXPECT_EQ(header.header_bytes(), 36u);
  EXPECT_EQ(bytes.substr(0, 8), "CMPITNSR");
  const unsigned char fields[] = {1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0};  // version, dtype, ndim
  EXPECT_EQ(std::memcmp(bytes.data() + 8, fields, sizeof fields), 0);
  const unsigned char dims[] = {3, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(std::memcmp(bytes.data() + 20, dims, sizeof dims), 0);
  EXPECT_EQ(header.elements(), 15);
}

TEST(TensorFile, HeaderReadsBackAsWritten) {
  for (const auto& shape :
       {std::vector<int64_t>{}, std::vector<int64_t>{120576}, std::vector<int64_t>{2, 0, 7}}) {
    TensorHeader header;
    header.shape = shape;
    const std::string bytes = encode_tensor_header(header) + "values";
    const auto back = decode_tensor_header(bytes.data(), bytes.size(), "t.f32");
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->shape, shape);
    EXPECT_EQ(back->dtype, TensorDtype::kFloat32);
  }
}

TEST(TensorFile, BytesWithoutTheMagicAreNoTensorFile) {
  const std::string raw = "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c";
  EXPECT_FALSE(decode_tensor_header(raw.data(), raw.size(), "raw.f32").has_value());
  EXPECT_FALSE(decode_tensor_header(raw.data(), 3, "short.f32").has_value());
}

TEST(TensorFile, HeadersThisVersionDoesNotReadAreRefusedByName) {
  TensorHeader header;
  header.shape = {4};
  const std::string good = encode_tensor_header(header);
  const auto with = [&](size_t at, uint32_t value) {
    std::string bytes = good;
    std::memcpy(bytes.data() + at, &value, sizeof value);
    return bytes;
  };
  std::string negative = good;
  const int64_t minus_one = -1;
  std::memcpy(negative.data() + 20, &minus_one, sizeof minus_one);
  const std::pair<std::string, std::string> cases[] = {
      {with(8, 2), "version 2"},
      {with(12, 7), "dtype 7"},
      {with(16, 33), "33 dimensions"},
      {with(16, 3), "truncated header"},
      {good.substr(0, 12), "truncated header"},
      {negative, "dimension 0 is -1"},
  };
  for (const auto& [bytes, expected] : cases) {
    try {
      decode_tensor_header(bytes.data(), bytes.size(), "bad.f32");
      ADD_FAILURE() << "accepted a header with " << expected;
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("bad.f32"), std::string::npos) << what;
      EXPECT_NE(what.find(expected), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace cmpi::io
