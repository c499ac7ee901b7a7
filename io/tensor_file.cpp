// Integers are copied as they lie in memory: the build targets little-endian
// hosts only (x86-64, aarch64), as the checkpoint shard files do.
#include "io/tensor_file.h"

#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace cmpi::io {
namespace {

constexpr char kMagic[8] = {'C', 'M', 'P', 'I', 'T', 'N', 'S', 'R'};
constexpr uint32_t kVersion = 1;

template <typename T>
void put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

template <typename T>
T get(const char* at) {
  T value;
  std::memcpy(&value, at, sizeof value);
  return value;
}

[[noreturn]] void fail(const std::string& file, const std::string& what) {
  throw std::runtime_error("tensor file '" + file + "': " + what);
}

}  // namespace

int64_t TensorHeader::elements() const {
  return std::accumulate(shape.begin(), shape.end(), int64_t(1), std::multiplies<int64_t>());
}

size_t TensorHeader::header_bytes() const {
  return kTensorHeaderFixedBytes + 8 * shape.size();
}

size_t TensorHeader::element_bytes() const {
  return 4;  // float32, the only dtype
}

std::string encode_tensor_header(const TensorHeader& header) {
  std::string out(kMagic, sizeof kMagic);
  put(out, kVersion);
  put(out, static_cast<uint32_t>(header.dtype));
  put(out, static_cast<uint32_t>(header.shape.size()));
  for (int64_t d : header.shape) put(out, d);
  return out;
}

std::optional<TensorHeader> decode_tensor_header(const char* bytes, size_t size,
                                                 const std::string& file) {
  if (size < sizeof kMagic || std::memcmp(bytes, kMagic, sizeof kMagic) != 0) return std::nullopt;
  if (size < kTensorHeaderFixedBytes)
    fail(file, "truncated header: " + std::to_string(size) + " bytes, the fixed part needs " +
                   std::to_string(kTensorHeaderFixedBytes));
  const auto version = get<uint32_t>(bytes + 8);
  if (version != kVersion)
    fail(file, "version " + std::to_string(version) + ", this build reads version " +
                   std::to_string(kVersion));
  TensorHeader header;
  const auto dtype = get<uint32_t>(bytes + 12);
  if (dtype != static_cast<uint32_t>(TensorDtype::kFloat32))
    fail(file, "dtype " + std::to_string(dtype) + ", this build reads 1 (float32) only");
  const auto ndim = get<uint32_t>(bytes + 16);
  if (ndim > kTensorFileMaxDims)
    fail(file, std::to_string(ndim) + " dimensions, at most " + std::to_string(kTensorFileMaxDims));
  if (size < kTensorHeaderFixedBytes + 8 * size_t(ndim))
    fail(file, "truncated header: " + std::to_string(ndim) + " dimensions need " +
                   std::to_string(kTensorHeaderFixedBytes + 8 * size_t(ndim)) + " bytes, got " +
                   std::to_string(size));
  // Elements times 4 bytes must fit an int64, or no file could hold them.
  int64_t elements = 1;
  for (uint32_t i = 0; i < ndim; ++i) {
    const auto d = get<int64_t>(bytes + kTensorHeaderFixedBytes + 8 * size_t(i));
    if (d < 0) fail(file, "dimension " + std::to_string(i) + " is " + std::to_string(d));
    if (d > 0 && elements > std::numeric_limits<int64_t>::max() / 4 / d)
      fail(file, "the shape holds more elements than a file can");
    elements *= d;
    header.shape.push_back(d);
  }
  return header;
}

}  // namespace cmpi::io
