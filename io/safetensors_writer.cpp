#include "io/safetensors_writer.h"

#include <cstdio>
#include <cstring>
#include <set>
#include <stdexcept>

namespace cmpi::io {
namespace {

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", unsigned(c));
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

std::string safetensors_bytes(const std::vector<SafetensorsTensor>& tensors,
                              const std::vector<std::pair<std::string, std::string>>& metadata) {
  std::string header = "{\"__metadata__\":{";
  for (size_t i = 0; i < metadata.size(); ++i)
    header +=
        (i ? "," : "") + json_string(metadata[i].first) + ":" + json_string(metadata[i].second);
  header += "}";
  std::set<std::string> seen;
  size_t data_bytes = 0;
  for (const auto& t : tensors) {
    if (!seen.insert(t.name).second)
      throw std::invalid_argument("safetensors: tensor " + t.name + " given twice");
    int64_t count = 1;
    std::string shape;
    for (const int64_t d : t.shape) {
      count *= d;
      shape += (shape.empty() ? "" : ",") + std::to_string(d);
    }
    const size_t begin = data_bytes;
    data_bytes += size_t(count) * sizeof(float);
    header += "," + json_string(t.name) + ":{\"dtype\":\"F32\",\"shape\":[" + shape +
              "],\"data_offsets\":[" + std::to_string(begin) + "," + std::to_string(data_bytes) +
              "]}";
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string file(8, '\0');
  const uint64_t length = header.size();
  std::memcpy(file.data(), &length, 8);  // little-endian hosts only (as the shard files)
  file.reserve(8 + header.size() + data_bytes);
  file += header;
  for (const auto& t : tensors) {
    int64_t count = 1;
    for (const int64_t d : t.shape) count *= d;
    file.append(reinterpret_cast<const char*>(t.values), size_t(count) * sizeof(float));
  }
  return file;
}

}  // namespace cmpi::io
