#include "checkpoint/safetensors_writer.h"

#include <cstdint>
#include <cstring>

#include "io/atomic_file.h"

namespace cmpi::checkpoint {

size_t write_safetensors(const LoadedCheckpoint& checkpoint, const std::string& path) {
  std::string header = "{\"__metadata__\":{\"format\":\"pt\",\"step\":\"" +
                       std::to_string(checkpoint.metadata().step) + "\"}";
  std::string data;
  for (const std::string& name : checkpoint.names()) {
    const GlobalParameter p = checkpoint.assemble(name);
    std::string shape;
    for (int64_t d : p.shape) shape += (shape.empty() ? "" : ",") + std::to_string(d);
    const size_t begin = data.size();
    data.append(reinterpret_cast<const char*>(p.values.data()), p.values.size() * sizeof(float));
    // Parameter names are [A-Za-z0-9_.]: nothing to escape in JSON.
    header += ",\"" + name + "\":{\"dtype\":\"F32\",\"shape\":[" + shape + "],\"data_offsets\":[" +
              std::to_string(begin) + "," + std::to_string(data.size()) + "]}";
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string file(8, '\0');
  const uint64_t length = header.size();
  std::memcpy(file.data(), &length, 8);  // little-endian hosts only (shard_file.cpp)
  file += header;
  file += data;
  io::write_file_atomically(path, file);
  return file.size();
}

}  // namespace cmpi::checkpoint
