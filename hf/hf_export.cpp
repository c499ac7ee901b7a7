#include "hf/hf_export.h"

#include <fstream>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <vector>

#include "checkpoint/slice_spec.h"
#include "data/tokenizer.h"
#include "hf/hf_tensor_map.h"
#include "hf/safetensors_reader.h"
#include "io/atomic_file.h"
#include "io/directories.h"
#include "io/safetensors_writer.h"
#include "models/family/gpt_family.h"

namespace cmpi::hf {
namespace {

bool names_tokenizer_file(const std::string& tokenizer) {
  return tokenizer.size() > 5 && tokenizer.compare(tokenizer.size() - 5, 5, ".json") == 0;
}

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("data.tokenizer " + path + ": cannot read it to copy");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

std::string architecture_name(HfArchitecture architecture) {
  switch (architecture) {
    case HfArchitecture::kGptNeoX:
      return "GPT-NeoX";
    case HfArchitecture::kGpt2:
      return "GPT-2";
    case HfArchitecture::kLlama:
      return "Llama";
  }
  return "?";
}

HfExportResult export_hf(const checkpoint::LoadedCheckpoint& checkpoint,
                         const config::Config& config, const std::string& dir) {
  HfExportResult result;
  result.architecture = hf_architecture(config.model);
  checkpoint::check_model_shape(checkpoint, models::checkpoint_shape(config.model));
  const models::GptOptions options = models::gpt_options(config.model);
  const auto mappings = tensor_mappings(result.architecture, options);
  // Hugging Face's layout of every tensor, kept until the file is written.
  std::vector<std::vector<float>> values;
  values.reserve(mappings.size());
  std::vector<io::SafetensorsTensor> tensors;
  std::string assembled_name;  // Llama's q, k, v parts read one tensor: assembled once
  checkpoint::GlobalParameter global;
  for (const auto& m : mappings) {
    if (m.ours != assembled_name) {
      global = checkpoint.assemble(m.ours);
      assembled_name = m.ours;
    }
    // A vocabulary table leaves without its padding rows.
    if (m.vocabulary_rows && global.shape.size() == 2 && m.our_shape.size() == 2 &&
        global.shape[1] == m.our_shape[1] && global.shape[0] > m.our_shape[0]) {
      global.values =
          checkpoint::resize_rows(std::move(global.values), global.shape[1], m.our_shape[0]);
      global.shape = m.our_shape;
    }
    if (global.shape != m.our_shape)
      throw std::runtime_error(checkpoint.dir() + ": parameter " + m.ours + " has shape " +
                               shape_text(global.shape) + ", the model expects " +
                               shape_text(m.our_shape));
    values.push_back(to_hf(m, global.values, options.heads));
  }
  for (size_t i = 0; i < mappings.size(); ++i)
    tensors.push_back({mappings[i].theirs, mappings[i].their_shape, values[i].data()});
  io::create_directories(dir);
  const std::string weights = io::safetensors_bytes(
      tensors, {{"format", "pt"}, {"step", std::to_string(checkpoint.metadata().step)}});
  io::write_file_atomically(dir + "/model.safetensors", weights);
  // The run's tokenizer says which ids start and end a document (none for
  // synthetic data): generate() stops at the end of a document.
  std::optional<HfTokenIds> ids;
  if (!config.data.tokenizer.empty()) {
    const auto tokenizer = data::make_tokenizer(config.data.tokenizer, "", "");
    ids = HfTokenIds{tokenizer->begin_of_document(), tokenizer->end_of_document()};
    result.eos_token_id = ids->eos;
  }
  const HfTokenIds* stated = ids ? &*ids : nullptr;
  io::write_file_atomically(dir + "/config.json", hf_config_json(config.model, stated));
  io::write_file_atomically(dir + "/generation_config.json", hf_generation_config_json(stated));
  if (names_tokenizer_file(config.data.tokenizer)) {
    io::write_file_atomically(dir + "/tokenizer.json", read_whole_file(config.data.tokenizer));
    result.tokenizer_from = config.data.tokenizer;
  }
  result.tensors = tensors.size();
  result.weight_bytes = weights.size();
  return result;
}

}  // namespace cmpi::hf
