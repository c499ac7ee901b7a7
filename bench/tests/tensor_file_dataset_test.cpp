// The benchmarks' data files as the trainer now writes them (a tensor file:
// header, then float32 values; io/tensor_file.h): read by their header,
// capped like raw files, and refused by name when the header and the bytes
// after it disagree. Raw float32 files stay readable (codec_bench_test.cpp).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/bench_dataset.h"
#include "io/tensor_file.h"

namespace cmpi::bench {
namespace {

std::string tensor_file(const std::string& name, const std::vector<int64_t>& shape,
                        const std::vector<float>& values) {
  const std::string path = ::testing::TempDir() + name;
  io::TensorHeader header;
  header.shape = shape;
  std::ofstream out(path, std::ios::binary);
  out << io::encode_tensor_header(header);
  out.write(reinterpret_cast<const char*>(values.data()),
            std::streamsize(values.size() * sizeof(float)));
  return path;
}

// What reading `path` is refused with; empty if it is read.
std::string refusal(const std::string& path) {
  try {
    f32_file_elements(path);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(BenchDataset, TensorFileIsReadByItsHeaderAndCapped) {
  std::vector<float> values(24);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.25f * float(i) - 3.0f;
  const std::string path = tensor_file("bench_tensor.f32", {2, 3, 4}, values);
  EXPECT_EQ(f32_file_elements(path), 24u);
  EXPECT_EQ(load_f32_dataset("t", path, 0).values, values);
  EXPECT_EQ(load_f32_dataset("t", path, 5).values,
            std::vector<float>(values.begin(), values.begin() + 5));
  std::remove(path.c_str());
}

TEST(BenchDataset, TensorFilesThatDisagreeWithTheirHeaderAreRefusedByName) {
  const std::vector<float> six(6, 1.0f);
  const std::string paths[] = {
      tensor_file("bench_short.f32", {7}, six),  // promises more than follows
      tensor_file("bench_long.f32", {5}, six),   // less
      tensor_file("bench_empty_tensor.f32", {0}, {}),
  };
  for (const std::string& path : paths) {
    const std::string why = refusal(path);
    EXPECT_NE(why.find(path), std::string::npos) << (why.empty() ? "accepted " + path : why);
    std::remove(path.c_str());
  }
}

}  // namespace
}  // namespace cmpi::bench
