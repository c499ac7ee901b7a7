// safetensors_bytes: named float32 tensors as the bytes of one .safetensors
// file (https://github.com/huggingface/safetensors): an 8-byte little-endian
// header length N, N bytes of JSON header mapping each tensor name to
// {"dtype":"F32","shape":[...],"data_offsets":[begin,end]} (offsets into the
// data that follows the header) plus "__metadata__" (string values only),
// padded with spaces to a multiple of 8 bytes, then the raw little-endian
// float32 data, tensors in the order given. The caller writes them (e.g.
// io::write_file_atomically). Names and metadata are written as JSON strings
// with '"', '\\' and control characters escaped.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace cmpi::io {

struct SafetensorsTensor {
  std::string name;
  std::vector<int64_t> shape;
  const float* values = nullptr;  // product(shape) floats, alive until the call returns
};

// Throws std::invalid_argument for a repeated name.
std::string safetensors_bytes(const std::vector<SafetensorsTensor>& tensors,
                              const std::vector<std::pair<std::string, std::string>>& metadata);

}  // namespace cmpi::io
