#include "trainer/tensor_dump.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace cmpi::trainer {

void write_f32(const std::string& path, const torch::Tensor& values) {
  auto flat = values.to(torch::kFloat).contiguous();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
  const size_t n = size_t(flat.numel());
  const size_t written = std::fwrite(flat.data_ptr<float>(), sizeof(float), n, f);
  std::fclose(f);
  if (written != n) throw std::runtime_error("short write to " + path);
}

}  // namespace cmpi::trainer
