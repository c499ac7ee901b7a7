// A generator's state is LibTorch's byte tensor (get_state/set_state, under
// the generator's own mutex); set_state checks its size, so bytes that are
// not a state of this generator become a std::runtime_error naming the part.
#include "models/generator_state.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cstring>
#include <mutex>
#include <stdexcept>

namespace cmpi::models {
namespace {

std::string generator_bytes(at::Generator& generator) {
  std::lock_guard<std::mutex> lock(generator.mutex());
  const auto state = generator.get_state();
  return std::string(reinterpret_cast<const char*>(state.data_ptr<uint8_t>()),
                     size_t(state.numel()));
}

void set_generator(const std::string& name, at::Generator& generator, const std::string& bytes) {
  auto state = torch::empty({int64_t(bytes.size())}, torch::kUInt8);
  std::memcpy(state.data_ptr<uint8_t>(), bytes.data(), bytes.size());
  std::lock_guard<std::mutex> lock(generator.mutex());
  try {
    generator.set_state(state);
  } catch (const c10::Error& error) {
    throw std::runtime_error("rank state " + name + ": not a generator state (" +
                             std::to_string(bytes.size()) +
                             " bytes): " + error.what_without_backtrace());
  }
}

}  // namespace

checkpoint::GeneratorPart generator_part(const std::string& name, at::Generator generator) {
  checkpoint::GeneratorPart part;
  part.name = name;
  part.save = [generator]() mutable { return generator_bytes(generator); };
  part.load = [name, generator](const std::string& bytes) mutable {
    set_generator(name, generator, bytes);
  };
  return part;
}

checkpoint::GeneratorPart default_generator_part() {
  return generator_part("torch/default_generator", at::detail::getDefaultCPUGenerator());
}

void restart_default_generator(uint64_t run_seed, int64_t step) {
  torch::manual_seed(run_seed ^ (0x9e3779b97f4a7c15ULL * uint64_t(step + 1)));
}

}  // namespace cmpi::models
