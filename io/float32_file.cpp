// The layout comes from the file's first bytes: enough for the largest
// header, read once, then compared with the file's size.
#include "io/float32_file.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include "io/tensor_file.h"

namespace cmpi::io {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error("float32 file '" + path + "': " + what);
}

}  // namespace

Float32FileLayout float32_file_layout(const std::string& path) {
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file) fail(path, "cannot open");
  const std::streamoff bytes = file.tellg();
  if (bytes <= 0) fail(path, "empty");
  std::string head(
      std::min<size_t>(size_t(bytes), kTensorHeaderFixedBytes + 8 * size_t(kTensorFileMaxDims)),
      '\0');
  file.seekg(0);
  if (!file.read(head.data(), std::streamsize(head.size()))) fail(path, "read failed");
  const auto header = decode_tensor_header(head.data(), head.size(), path);
  if (!header) {
    if (bytes % 4 != 0)
      fail(path, std::to_string(bytes) + " bytes is not a whole number of float32 values");
    return {size_t(bytes / 4), 0, true};
  }
  const size_t elements = size_t(header->elements());
  const size_t data_bytes = size_t(bytes) - header->header_bytes();
  if (elements == 0) fail(path, "the tensor is empty");
  if (data_bytes != elements * header->element_bytes())
    fail(path, "the header promises " + std::to_string(elements) + " float32 values, " +
                   std::to_string(data_bytes) + " bytes follow it");
  return {elements, header->header_bytes(), false};
}

std::vector<float> read_float32_values(const std::string& path, const Float32FileLayout& layout,
                                       size_t count) {
  count = std::min(count, layout.elements);
  std::ifstream file(path, std::ios::binary);
  if (!file) fail(path, "cannot open");
  std::vector<float> values(count);
  file.seekg(std::streamoff(layout.data_offset));
  if (!file.read(reinterpret_cast<char*>(values.data()), std::streamsize(count * sizeof(float))))
    fail(path, "read failed");
  return values;
}

std::vector<float> read_float32_file(const std::string& path) {
  const Float32FileLayout layout = float32_file_layout(path);
  return read_float32_values(path, layout, layout.elements);
}

}  // namespace cmpi::io
