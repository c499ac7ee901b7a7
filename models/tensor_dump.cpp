// Header and values go out as one buffer: write_file_atomically takes one,
// and a dump is a debugging aid on models small enough for the copy.
#include "models/tensor_dump.h"

#include "io/atomic_file.h"
#include "io/tensor_file.h"

namespace cmpi::models {

void write_f32(const std::string& path, const torch::Tensor& values) {
  auto flat = values.to(torch::kCPU, torch::kFloat).contiguous();
  io::TensorHeader header;
  header.dtype = io::TensorDtype::kFloat32;
  header.shape = flat.sizes().vec();
  std::string bytes = io::encode_tensor_header(header);
  bytes.append(reinterpret_cast<const char*>(flat.data_ptr<float>()),
               size_t(flat.numel()) * sizeof(float));
  io::write_file_atomically(path, bytes);
}

}  // namespace cmpi::models
