#include "checkpoint/checksum.h"

#include <cstdio>

namespace cmpi::checkpoint {

uint64_t fnv1a64(const void* data, size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < size; ++i) hash = (hash ^ bytes[i]) * 0x100000001b3ULL;
  return hash;
}

std::string checksum_hex(uint64_t checksum) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(checksum));
  return text;
}

}  // namespace cmpi::checkpoint
