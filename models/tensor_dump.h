// Writes a float tensor as a tensor file (io/tensor_file.h: a header with
// magic, dtype float32 and the tensor's shape, then its values as
// little-endian float32), the format the benchmarks read, atomically: the
// file is complete or absent; errors throw io::FileError.
#pragma once

#include <torch/torch.h>

#include <string>

namespace cmpi::models {

void write_f32(const std::string& path, const torch::Tensor& values);

}  // namespace cmpi::models
