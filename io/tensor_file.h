// Tensor file: one tensor behind a small header that says what it holds, so a
// reader needs no side channel for the element type or the shape. What
// `cmpi-train --dump-tensors` writes (gradients.f32, activations.f32,
// parameters.f32; models/tensor_dump.h) and the benchmarks read
// (bench/bench_dataset.h).
//
// Bytes (little-endian, no padding):
//   "CMPITNSR" u32 version=1 u32 dtype u32 ndim i64 dims[ndim]
//   then the elements, row-major: product(dims) values of the dtype
// dtype 1 is float32 (IEEE 754 binary32), the only one so far. The header
// takes 20 + 8 * ndim bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cmpi::io {

enum class TensorDtype : uint32_t { kFloat32 = 1 };

struct TensorHeader {
  TensorDtype dtype = TensorDtype::kFloat32;
  std::vector<int64_t> shape;

  int64_t elements() const;      // product of the shape (1 for a scalar)
  size_t header_bytes() const;   // where the elements start
  size_t element_bytes() const;  // bytes of one element of dtype
};

constexpr size_t kTensorHeaderFixedBytes = 20;  // magic, version, dtype, ndim
constexpr uint32_t kTensorFileMaxDims = 32;

std::string encode_tensor_header(const TensorHeader& header);

// Reads the header at the start of `bytes` (`size` of them, at least the
// header's; more may follow). std::nullopt if they do not start with the
// magic: not a tensor file. Throws std::runtime_error naming `file` if they
// do but the rest is no header this version reads (version, dtype, ndim
// above kTensorFileMaxDims, a negative dimension, too few bytes).
std::optional<TensorHeader> decode_tensor_header(const char* bytes, size_t size,
                                                 const std::string& file);

}  // namespace cmpi::io
