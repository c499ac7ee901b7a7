// A safetensors file's header (hf/safetensors_reader.h): the input is the
// file's bytes; its 8-byte length and JSON header go through the checks
// SafetensorsReader::open makes, with what follows the header as the data.
// Accepted entries must lie inside the data. A refusal is a
// std::runtime_error naming the file.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "bench/fuzz/fuzz_check.h"
#include "hf/safetensors_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 8) return 0;  // open() refuses these before any parsing
  uint64_t header_bytes = 0;
  std::memcpy(&header_bytes, data, 8);
  if (header_bytes > size - 8) return 0;  // likewise
  const std::string header(reinterpret_cast<const char*>(data) + 8, header_bytes);
  const uint64_t data_bytes = size - 8 - header_bytes;
  try {
    const auto reader =
        cmpi::hf::SafetensorsReader::from_header(cmpi::fuzz::kLabel, header, data_bytes);
    for (const auto& [name, entry] : reader.entries()) {
      if (entry.begin > entry.end || entry.end > data_bytes)
        cmpi::fuzz::defect("tensor " + name + " accepted outside the data");
      if (reader.find(name) != &entry) cmpi::fuzz::defect("find() misses tensor " + name);
      cmpi::hf::shape_text(entry.shape);
    }
  } catch (const std::runtime_error& e) {
    cmpi::fuzz::require_labelled(e.what());
  }
  return 0;
}
