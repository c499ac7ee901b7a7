#include "generate/model_source.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "checkpoint/checkpoint_store.h"
#include "checkpoint/metadata.h"
#include "config/config_loader.h"
#include "config/run_paths.h"
#include "data/json_value.h"
#include "hf/hf_config_reader.h"
#include "hf/hf_export.h"
#include "hf/hf_model_config.h"

namespace cmpi::generate {
namespace {

namespace fs = std::filesystem;

bool is_file(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}
bool directory_exists(const fs::path& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot read it");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Whether `dir` holds step_* checkpoint directories.
bool holds_checkpoints(const fs::path& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.path().filename().string().rfind("step_", 0) == 0) return true;
  return false;
}

ModelSource from_checkpoint(const std::string& dir) {
  ModelSource source;
  source.kind = ModelSource::Kind::kCheckpoint;
  source.dir = dir;
  // LoadedCheckpoint verifies every shard against the metadata when the
  // weights are read; here only what says which model and tokenizer.
  const auto metadata = checkpoint::read_metadata((fs::path(dir) / "metadata.yaml").string());
  source.step = metadata.step;
  for (const auto& [key, value] : metadata.layout)
    if (value > 1 || key == "zero_stage")
      source.layout += (source.layout.empty() ? "" : " ") + key + " " + std::to_string(value);
  const std::string config_path = (fs::path(dir) / metadata.config.file).string();
  source.config = config::parse_config(read_text(config_path), config_path);
  if (source.config.model.kind != config::ModelFamily::kGpt)
    throw std::runtime_error(config_path + ": model.kind is " +
                             config::name_of(source.config.model.kind) +
                             "; cmpi-generate runs GPT models");
  source.tokenizer = source.config.data.tokenizer;
  return source;
}

ModelSource from_hugging_face(const std::string& dir) {
  ModelSource source;
  source.kind = ModelSource::Kind::kHuggingFace;
  source.dir = dir;
  const std::string config_path = (fs::path(dir) / "config.json").string();
  data::JsonValue json;
  try {
    json = data::JsonValue::parse(read_text(config_path));
  } catch (const data::JsonError& e) {
    throw std::runtime_error(config_path + ": not JSON: " + e.what());
  }
  source.config.model = hf::model_config_from_hf(json, config_path);
  if (const data::JsonValue* eos = json.find("eos_token_id");
      eos && eos->kind() == data::JsonValue::Kind::kNumber) {
    if (!eos->exact_integer() || *eos->exact_integer() < 0)
      throw std::runtime_error(config_path + ": eos_token_id is " + eos->text() +
                               ", not a token id");
    source.end_of_document = *eos->exact_integer();
  }
  const fs::path tokenizer = fs::path(dir) / "tokenizer.json";
  if (is_file(tokenizer)) source.tokenizer = tokenizer.string();
  return source;
}

}  // namespace

std::string ModelSource::description() const {
  if (kind == Kind::kCheckpoint)
    return "checkpoint " + dir + " (step " + std::to_string(step) + ", saved by " + layout + ")";
  return "Hugging Face " + hf::architecture_name(hf::hf_architecture(config.model)) + " model " +
         dir;
}

ModelSource find_model_source(const std::string& path) {
  const fs::path p(path);
  if (!directory_exists(p))
    throw std::runtime_error(path + ": " +
                             (fs::exists(p) ? "not a directory" : "no such directory") +
                             " (--model takes a checkpoint, run or Hugging Face directory)");
  if (is_file(p / "metadata.yaml")) return from_checkpoint(path);
  if (is_file(p / "config.json")) return from_hugging_face(path);
  if (holds_checkpoints(p)) return from_checkpoint(checkpoint::latest_checkpoint(path));
  if (directory_exists(p / "checkpoints"))
    return from_checkpoint(checkpoint::latest_checkpoint((p / "checkpoints").string()));
  if (is_file(p / "config.yaml")) {
    // A run directory whose checkpoints went to checkpoint.dir.
    const std::string config_path = (p / "config.yaml").string();
    const auto run = config::parse_config(read_text(config_path), config_path);
    const std::string root = config::checkpoint_root(run);
    if (run.checkpoint.every <= 0 || !directory_exists(root))
      throw std::runtime_error(path + ": a run directory without checkpoints (checkpoint.every " +
                               std::to_string(run.checkpoint.every) +
                               "); train with checkpoint.every > 0 to generate from it");
    return from_checkpoint(checkpoint::latest_checkpoint(root));
  }
  throw std::runtime_error(path +
                           ": neither a checkpoint (metadata.yaml), a run directory "
                           "(checkpoints/), nor a Hugging Face model (config.json)");
}

}  // namespace cmpi::generate
