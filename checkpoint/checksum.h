// FNV-1a 64 over bytes: the checksum a checkpoint's metadata stores for every
// shard and for its config file. Not cryptographic; it catches truncation,
// bit rot and a shard from another save. Processes 8 bytes per round trip
// through the loop body to stay near memory speed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace cmpi::checkpoint {

uint64_t fnv1a64(const void* data, size_t size);
// "0x" followed by 16 lower-case hex digits.
std::string checksum_hex(uint64_t checksum);

}  // namespace cmpi::checkpoint
