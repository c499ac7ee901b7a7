// A checkpoint shard file (checkpoint/shard_file.h): decoded, or refused
// with a std::runtime_error naming the file. Every decoded entry holds its
// three runs of equal length.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "bench/fuzz/fuzz_check.h"
#include "checkpoint/shard_file.h"

using namespace cmpi::checkpoint;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  RankState rank_state;
  std::vector<ShardEntry> entries;
  try {
    entries = decode_shard(bytes, cmpi::fuzz::kLabel, &rank_state);
  } catch (const std::runtime_error& e) {
    cmpi::fuzz::require_labelled(e.what());
    return 0;
  }
  for (const auto& entry : entries)
    if (entry.exp_avg.size() != entry.values.size() ||
        entry.exp_avg_sq.size() != entry.values.size())
      cmpi::fuzz::defect("entry " + entry.name + " decoded with unequal state lengths");
  return 0;
}
