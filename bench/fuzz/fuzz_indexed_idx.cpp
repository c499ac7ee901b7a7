// A Megatron/NeoX indexed dataset (data/indexed_dataset.h) whose .idx file
// holds arbitrary bytes. The input's first 2 bytes give the .bin file's
// length (its bytes are a pattern), the rest is the .idx file; both are
// written to a private temporary directory because the reader maps files.
// A dataset that opens has every sequence and document readable and its
// token check runs; a refusal is a DatasetError naming one of the files.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "bench/fuzz/fuzz_check.h"
#include "data/indexed_dataset.h"

using namespace cmpi::data;

namespace {

// One directory per fuzzing process, made on first use.
const std::string& prefix() {
  static const std::string path = [] {
    std::string dir = "/tmp/cmpi-fuzz-idx-XXXXXX";
    if (mkdtemp(dir.data()) == nullptr) cmpi::fuzz::defect("cannot make a temporary directory");
    return dir + "/" + cmpi::fuzz::kLabel;
  }();
  return path;
}

void write_file(const std::string& path, const char* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data, std::streamsize(size));
  if (!out) cmpi::fuzz::defect("cannot write " + path);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t bin_bytes = size_t(data[0]) | size_t(data[1]) << 8;
  std::vector<char> bin(bin_bytes);
  for (size_t i = 0; i < bin_bytes; ++i) bin[i] = char(i * 37 % 251);
  write_file(prefix() + ".bin", bin.data(), bin.size());
  write_file(prefix() + ".idx", reinterpret_cast<const char*>(data) + 2, size - 2);
  try {
    const IndexedDataset dataset(prefix());
    std::vector<int32_t> tokens;
    uint64_t total = 0;
    for (size_t s = 0; s < dataset.sequences(); ++s) {
      dataset.copy_sequence(s, tokens);
      if (tokens.size() != dataset.sequence_length(s))
        cmpi::fuzz::defect("sequence " + std::to_string(s) + " copies a wrong length");
      total += tokens.size();
    }
    if (total != dataset.total_tokens()) cmpi::fuzz::defect("sequence lengths miss the total");
    for (size_t d = 0; d < dataset.documents(); ++d)
      if (dataset.document_begin(d) > dataset.document_end(d) ||
          dataset.document_end(d) > dataset.sequences())
        cmpi::fuzz::defect("document " + std::to_string(d) + " spans no valid sequences");
    try {
      dataset.validate_tokens(1000);
    } catch (const DatasetError& e) {
      cmpi::fuzz::require_labelled(e.what());
    }
  } catch (const DatasetError& e) {
    cmpi::fuzz::require_labelled(e.what());
  }
  return 0;
}
