#include "checkpoint/safetensors_writer.h"

#include <vector>

#include "io/atomic_file.h"
#include "io/safetensors_writer.h"

namespace cmpi::checkpoint {

size_t write_safetensors(const LoadedCheckpoint& checkpoint, const std::string& path) {
  std::vector<GlobalParameter> params;
  const auto names = checkpoint.names();
  for (const std::string& name : names) params.push_back(checkpoint.assemble(name));
  std::vector<io::SafetensorsTensor> tensors;
  for (size_t i = 0; i < names.size(); ++i)
    tensors.push_back({names[i], params[i].shape, params[i].values.data()});
  const std::string file = io::safetensors_bytes(
      tensors, {{"format", "pt"}, {"step", std::to_string(checkpoint.metadata().step)}});
  io::write_file_atomically(path, file);
  return file.size();
}

}  // namespace cmpi::checkpoint
