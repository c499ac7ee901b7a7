// write_safetensors: the consolidated model of a checkpoint as one
// .safetensors file (https://github.com/huggingface/safetensors): an 8-byte
// little-endian header length N, N bytes of JSON header mapping each tensor
// name to {"dtype":"F32","shape":[...],"data_offsets":[begin,end]} (offsets
// into the data that follows the header) plus "__metadata__" (string values
// only), padded with spaces to a multiple of 8 bytes, then the raw
// little-endian float32 data, tensors in header order (sorted by name).
// Written atomically (io/).
#pragma once

#include <map>
#include <string>

#include "checkpoint/loaded_checkpoint.h"

namespace cmpi::checkpoint {

// Every parameter's global weights (moments are not exported). Returns the
// number of bytes written.
size_t write_safetensors(const LoadedCheckpoint& checkpoint, const std::string& path);

}  // namespace cmpi::checkpoint
