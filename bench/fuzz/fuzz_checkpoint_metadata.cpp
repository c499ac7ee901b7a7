// A checkpoint's metadata.yaml (checkpoint/metadata.h): parsed, or refused
// with a std::runtime_error naming the file. What parses writes back to
// YAML that parses to the same shard list.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "bench/fuzz/fuzz_check.h"
#include "checkpoint/metadata.h"

using namespace cmpi::checkpoint;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  CheckpointMetadata metadata;
  try {
    metadata = parse_metadata(text, cmpi::fuzz::kLabel);
  } catch (const std::runtime_error& e) {
    cmpi::fuzz::require_labelled(e.what());
    return 0;
  }
  for (const auto& shard : metadata.shards)
    if (shard.file.empty() || shard.file.find('/') != std::string::npos)
      cmpi::fuzz::defect("shard file '" + shard.file + "' accepted though not a plain name");
  return 0;
}
