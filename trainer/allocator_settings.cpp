#include "trainer/allocator_settings.h"

#include <malloc.h>

#include <cstdlib>
#include <cstring>

namespace cmpi::trainer {
namespace {

constexpr int kMmapThresholdBytes = 64 << 20;
constexpr int kTrimThresholdBytes = 512 << 20;

bool environment_configures_malloc() {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables != nullptr && std::strstr(tunables, "glibc.malloc.") != nullptr) return true;
  return std::getenv("MALLOC_MMAP_THRESHOLD_") != nullptr ||
         std::getenv("MALLOC_TRIM_THRESHOLD_") != nullptr;
}

}  // namespace

std::string keep_freed_memory_for_reuse() {
  if (environment_configures_malloc()) return "";
  // mallopt returns 1 on success; a C library without these knobs keeps its
  // own behaviour, which is correct, only slower.
  const bool mmap_set = mallopt(M_MMAP_THRESHOLD, kMmapThresholdBytes) == 1;
  const bool trim_set = mallopt(M_TRIM_THRESHOLD, kTrimThresholdBytes) == 1;
  if (!mmap_set || !trim_set) return "";
  return "malloc: mmap threshold 64 MiB, trim threshold 512 MiB (freed tensors reused)";
}

}  // namespace cmpi::trainer
