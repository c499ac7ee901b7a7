// HfPretrained: a Hugging Face GPT-NeoX, GPT-2 or Llama model directory opened as
// the initial weights of a run (model.init_from). open() reads config.json
// and checks it against the run's model section (hf_model_config.h), finds
// the weights (model.safetensors, or the shards model.safetensors.index.json
// maps tensor names to), and checks before any value is read that every
// tensor the model needs is there with the shape it must have, naming the
// file and the tensor otherwise. weights() then reads one parameter's
// global tensor in this project's layout (hf_tensor_map.h), widened to
// float32; each rank cuts its own slice of it for its layout. Buffers some
// exports carry (attention masks, rotary inv_freq) are not parameters and
// are ignored. Torch-free.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "hf/hf_model_config.h"
#include "hf/hf_tensor_map.h"
#include "hf/safetensors_reader.h"

namespace cmpi::hf {

class HfPretrained {
 public:
  // Throws std::runtime_error naming the file and the field or tensor.
  static HfPretrained open(const std::string& dir, const config::ModelConfig& model);

  HfArchitecture architecture() const { return architecture_; }
  const std::string& dir() const { return dir_; }
  // Our parameter `name`'s global tensor, row-major in our layout. Throws
  // std::runtime_error naming the file for a read that fails, or for a name
  // the model does not have.
  std::vector<float> weights(const std::string& name) const;

 private:
  struct Source {
    TensorMapping mapping;
    std::string stored_name;  // the name in the file (GPT-2 may lack "transformer.")
    size_t file = 0;          // index into files_
  };
  std::string dir_;
  HfArchitecture architecture_ = HfArchitecture::kGptNeoX;
  int64_t heads_ = 0;
  std::vector<SafetensorsReader> files_;
  // By our name: one tensor, or the parts fused into it (Llama's q, k, v).
  std::map<std::string, std::vector<Source>> sources_;
};

}  // namespace cmpi::hf
