// Reading a file of float32 values: a tensor file (tensor_file.h), whose
// header says how many values follow it, or a raw float32 file (the format
// before the header: the whole file is little-endian float32 values).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace cmpi::io {

// Where a float32 file's values lie.
struct Float32FileLayout {
  size_t elements = 0;
  size_t data_offset = 0;  // the tensor header's size; 0 when raw
  bool raw = false;        // no tensor header
};

// Throws std::runtime_error naming the file if it cannot be opened or read,
// is empty, has a header this build does not read or one whose shape
// disagrees with the bytes after it, or, raw, is not a whole number of
// float32 values.
Float32FileLayout float32_file_layout(const std::string& path);

// The first `count` values (at most layout.elements) as they lie in the file
// (little-endian). Throws std::runtime_error naming the file if reading fails.
std::vector<float> read_float32_values(const std::string& path, const Float32FileLayout& layout,
                                       size_t count);

// All values of a float32 file, tensor or raw.
std::vector<float> read_float32_file(const std::string& path);

}  // namespace cmpi::io
