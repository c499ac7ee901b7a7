// CRC-32C (Castagnoli): the checksum TFRecord framing uses (TensorBoard's
// event files, io/tensorboard_writer.h). Written here from the polynomial's
// description, a byte-wise table over the reflected polynomial 0x82F63B78
// with the register starting at and finally xor-ed with all ones, because
// Debian 12 packages no CRC-32C library for C++ (its crc32c packages are
// Python's) and a table of 256 words is all the format needs.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cmpi::io {

// The CRC-32C of [data, data + size); crc32c("123456789") = 0xE3069283.
uint32_t crc32c(const void* data, size_t size);

// TFRecord's masked form of a CRC (rotated right by 15 bits plus a
// constant), so that a checksum stored next to its data does not checksum
// to a fixed value.
uint32_t masked_crc32c(const void* data, size_t size);

}  // namespace cmpi::io
