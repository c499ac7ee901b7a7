#include "hf/hf_pretrained.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "data/json_value.h"
#include "models/family/gpt_family.h"

namespace cmpi::hf {
namespace {

constexpr const char* kConfigFile = "config.json";
constexpr const char* kWeightsFile = "model.safetensors";
constexpr const char* kIndexFile = "model.safetensors.index.json";

bool exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

data::JsonValue read_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot read it");
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  try {
    return data::JsonValue::parse(text);
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": not JSON: " + e.what());
  }
}

// The weight files of `dir` and, for a sharded model, which file holds which
// tensor (empty for one file).
struct WeightFiles {
  std::vector<std::string> paths;
  std::map<std::string, size_t> file_of;  // sharded only
};

WeightFiles find_weight_files(const std::string& dir) {
  WeightFiles out;
  if (exists(dir + "/" + kWeightsFile)) {
    out.paths.push_back(dir + "/" + kWeightsFile);
    return out;
  }
  const std::string index_path = dir + "/" + kIndexFile;
  if (!exists(index_path)) {
    const bool pickled = exists(dir + "/pytorch_model.bin");
    throw std::runtime_error(
        dir + ": no " + kWeightsFile + " or " + kIndexFile +
        (pickled ? " (pytorch_model.bin, a pickle, is not read: save the model with "
                   "safe_serialization, the default of save_pretrained)"
                 : ""));
  }
  const auto index = read_json(index_path);
  const auto* map = index.find("weight_map");
  if (!map || map->kind() != data::JsonValue::Kind::kObject)
    throw std::runtime_error(index_path + ": no weight_map object");
  std::map<std::string, size_t> file_index;
  for (const auto& [tensor, file] : map->members()) {
    if (file.kind() != data::JsonValue::Kind::kString || file.text().empty() ||
        file.text().find('/') != std::string::npos)
      throw std::runtime_error(index_path + ": weight_map[" + tensor +
                               "] is not a file name in the directory");
    const auto [at, added] = file_index.emplace(file.text(), out.paths.size());
    if (added) out.paths.push_back(dir + "/" + file.text());
    out.file_of[tensor] = at->second;
  }
  return out;
}

}  // namespace

HfPretrained HfPretrained::open(const std::string& dir, const config::ModelConfig& model) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw std::runtime_error(dir + ": not a directory (a Hugging Face model directory with " +
                             kConfigFile + " and " + kWeightsFile + ")");
  const std::string config_path = dir + "/" + kConfigFile;
  if (!exists(config_path)) throw std::runtime_error(config_path + ": missing");
  const HfConfigFacts facts = check_hf_config(read_json(config_path), model, config_path);

  HfPretrained pretrained;
  pretrained.dir_ = dir;
  pretrained.architecture_ = facts.architecture;
  pretrained.heads_ = model.heads;
  const WeightFiles files = find_weight_files(dir);
  for (const auto& path : files.paths) pretrained.files_.push_back(SafetensorsReader::open(path));
  const models::GptOptions options = models::gpt_options(model);
  for (const auto& m : tensor_mappings(facts.architecture, options, facts.position_rows)) {
    if (m.export_only) continue;
    // GPT-2 files saved from the bare GPT2Model have no "transformer." prefix.
    std::vector<std::string> names{m.theirs};
    if (facts.architecture == HfArchitecture::kGpt2 && m.theirs.rfind("transformer.", 0) == 0)
      names.push_back(m.theirs.substr(12));
    Source source{m, "", 0};
    for (const auto& name : names) {
      if (files.file_of.empty()) {
        if (!pretrained.files_[0].find(name)) continue;
      } else {
        const auto found = files.file_of.find(name);
        if (found == files.file_of.end()) continue;
        source.file = found->second;
      }
      source.stored_name = name;
      break;
    }
    const std::string where = files.file_of.empty() ? files.paths[0] : dir + "/" + kIndexFile;
    if (source.stored_name.empty())
      throw std::runtime_error(where + ": no tensor " + m.theirs + " (model parameter " + m.ours +
                               ")");
    const SafetensorsReader& file = pretrained.files_[source.file];
    const SafetensorsEntry* entry = file.find(source.stored_name);
    if (!entry)
      throw std::runtime_error(file.path() + ": no tensor " + source.stored_name + " (" + where +
                               " places it there)");
    if (!readable_dtype(entry->dtype))
      throw std::runtime_error(file.path() + ": tensor " + source.stored_name + ": " +
                               unreadable_dtype_message(entry->dtype));
    if (entry->shape != m.their_shape)
      throw std::runtime_error(file.path() + ": tensor " + source.stored_name + " has shape " +
                               shape_text(entry->shape) + ", this config needs " +
                               shape_text(m.their_shape) + " (model parameter " + m.ours + ")");
    pretrained.sources_[m.ours].push_back(std::move(source));
  }
  return pretrained;
}

std::vector<float> HfPretrained::weights(const std::string& name) const {
  const auto found = sources_.find(name);
  if (found == sources_.end())
    throw std::runtime_error(dir_ + ": the model has no parameter " + name);
  std::vector<TensorMapping> parts;
  std::vector<std::vector<float>> values;
  for (const Source& s : found->second) {
    parts.push_back(s.mapping);
    values.push_back(files_[s.file].read(s.stored_name));
  }
  return from_hf_parts(parts, values, heads_);
}

}  // namespace cmpi::hf
