// Written by hand (flow style for the maps, one shard per line), read back
// with yaml-cpp; every field is required (residual_buffers, added later,
// defaults to 0), unknown ones are ignored so a newer
// writer can add fields.
#include "checkpoint/metadata.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "checkpoint/checksum.h"

namespace cmpi::checkpoint {
namespace {

constexpr const char* kFormat = "cmpi-checkpoint";
constexpr int kVersion = 1;

std::string flow_map(const std::map<std::string, int64_t>& values) {
  std::string out = "{";
  for (const auto& [key, value] : values)
    out += (out.size() > 1 ? ", " : "") + key + ": " + std::to_string(value);
  return out + "}";
}

std::string digest_yaml(const FileDigest& d, bool with_params) {
  std::string out = "{file: " + d.file + ", bytes: " + std::to_string(d.bytes) + ", fnv1a64: \"" +
                    checksum_hex(d.fnv1a64) + "\"";
  if (!with_params) return out + "}";
  out += ", params: [";
  for (size_t i = 0; i < d.params.size(); ++i) out += (i ? ", " : "") + d.params[i];
  return out + "]}";
}

// "0x" and 1 to 16 hex digits, as checksum_hex writes them (the prefix
// optional). std::stoull alone would accept "-1" or "1 trailing" and throws
// std::invalid_argument (no runtime_error, so the file would go unnamed) on
// "xyz".
uint64_t parse_checksum(const std::string& text) {
  const size_t digits = text.rfind("0x", 0) == 0 || text.rfind("0X", 0) == 0 ? 2 : 0;
  if (text.size() == digits || text.size() > digits + 16 ||
      text.find_first_not_of("0123456789abcdefABCDEF", digits) != std::string::npos)
    throw std::runtime_error("fnv1a64 '" + text +
                             "' is not a hex checksum (0x and 1 to 16 digits)");
  return std::stoull(text.substr(digits), nullptr, 16);
}

FileDigest read_digest(const YAML::Node& node) {
  FileDigest d;
  d.file = node["file"].as<std::string>();
  d.bytes = node["bytes"].as<uint64_t>();
  d.fnv1a64 = parse_checksum(node["fnv1a64"].as<std::string>());
  if (node["params"])
    for (const auto& name : node["params"]) d.params.push_back(name.as<std::string>());
  if (d.file.empty() || d.file.find('/') != std::string::npos)
    throw std::runtime_error("file name '" + d.file + "' is not a plain name");
  return d;
}

std::map<std::string, int64_t> read_map(const YAML::Node& node) {
  std::map<std::string, int64_t> out;
  for (const auto& kv : node) out[kv.first.as<std::string>()] = kv.second.as<int64_t>();
  return out;
}

}  // namespace

std::string to_yaml(const CheckpointMetadata& m) {
  std::ostringstream out;
  out << "# cmpi-train checkpoint: complete only with this file (written last)\n"
      << "format: " << kFormat << "\nversion: " << kVersion << "\nstep: " << m.step
      << "\noptimizer_steps: " << m.optimizer_steps << "\nskipped_steps: " << m.skipped_steps
      << "\nresidual_buffers: " << m.residual_buffers << "\nlayout: " << flow_map(m.layout)
      << "\nmodel: " << flow_map(m.model) << "\nconfig: " << digest_yaml(m.config, false)
      << "\nshards:\n";
  for (const auto& shard : m.shards) out << "  - " << digest_yaml(shard, true) << "\n";
  return out.str();
}

CheckpointMetadata read_metadata(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot read (missing: the checkpoint is incomplete)");
  std::stringstream text;
  text << in.rdbuf();
  return parse_metadata(text.str(), path);
}

CheckpointMetadata parse_metadata(const std::string& text, const std::string& path) {
  try {
    const YAML::Node root = YAML::Load(text);
    if (!root["format"] || root["format"].as<std::string>() != kFormat)
      throw std::runtime_error(std::string("not a ") + kFormat + " metadata file");
    if (root["version"].as<int>() != kVersion)
      throw std::runtime_error("format version " + root["version"].as<std::string>() +
                               ", this build reads " + std::to_string(kVersion));
    CheckpointMetadata m;
    m.step = root["step"].as<int64_t>();
    m.optimizer_steps = root["optimizer_steps"].as<int64_t>();
    m.skipped_steps = root["skipped_steps"].as<int64_t>();
    if (root["residual_buffers"]) m.residual_buffers = root["residual_buffers"].as<int64_t>();
    m.layout = read_map(root["layout"]);
    m.model = read_map(root["model"]);
    m.config = read_digest(root["config"]);
    for (const auto& shard : root["shards"]) m.shards.push_back(read_digest(shard));
    if (m.shards.empty()) throw std::runtime_error("no shards listed");
    return m;
  } catch (const std::runtime_error& e) {  // YAML::Exception included
    throw std::runtime_error(path + ": malformed checkpoint metadata: " + e.what());
  }
}

}  // namespace cmpi::checkpoint
