#include "models/tensor_dump.h"

#include "io/atomic_file.h"

namespace cmpi::models {

void write_f32(const std::string& path, const torch::Tensor& values) {
  auto flat = values.to(torch::kFloat).contiguous();
  io::write_file_atomically(path, flat.data_ptr<float>(), size_t(flat.numel()) * sizeof(float));
}

}  // namespace cmpi::models
