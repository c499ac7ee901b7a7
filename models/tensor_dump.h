// Writes a float tensor as raw little-endian float32 (the benchmark's data format),
// atomically: the file is complete or absent; errors throw io::FileError.
#pragma once

#include <torch/torch.h>

#include <string>

namespace cmpi::models {

void write_f32(const std::string& path, const torch::Tensor& values);

}  // namespace cmpi::models
