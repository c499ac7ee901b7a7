// Little-endian integer fields in byte buffers, the one encoding every wire
// format of the project uses (payload header, chunk frames, chunk tables,
// sparse bodies). Written byte by byte rather than by memcpy so that the
// formats stay the same on a big-endian host, and so that the pointer needs
// no alignment; compilers turn each into a single load or store on
// little-endian machines.
#pragma once

#include <cstdint>

namespace cmpi::compress {

inline void store_le16(uint8_t* p, uint16_t v) {
  p[0] = uint8_t(v);
  p[1] = uint8_t(v >> 8);
}

inline void store_le32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
}

inline void store_le64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (8 * i));
}

inline uint16_t load_le16(const uint8_t* p) {
  return uint16_t(p[0] | (p[1] << 8));
}

inline uint32_t load_le32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

inline uint64_t load_le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace cmpi::compress
