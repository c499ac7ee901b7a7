// write_safetensors: the consolidated model of a checkpoint as one
// .safetensors file with this project's own parameter names
// (io/safetensors_writer.h: header, float32 data), tensors sorted by name,
// the step in the metadata. Written atomically (io/). Hugging Face's names
// and layouts are hf/hf_export.h's.
#pragma once

#include <map>
#include <string>

#include "checkpoint/loaded_checkpoint.h"

namespace cmpi::checkpoint {

// Every parameter's global weights (moments are not exported). Returns the
// number of bytes written.
size_t write_safetensors(const LoadedCheckpoint& checkpoint, const std::string& path);

}  // namespace cmpi::checkpoint
