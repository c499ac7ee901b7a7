// Writes the decode target's seed corpus: for each codec setting of
// codec_fuzz_specs.h, the encoding of a few small float vectors (smooth,
// sparse, with a non-finite value), in the target's framed input layout
// (setting, mode 1, flags, n, body). Run once by hand; its output is
// committed under bench/fuzz/corpus/codec_decode/.
//   make_codec_seeds DIR
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "bench/fuzz/codec_fuzz_specs.h"
#include "compress/codec.h"
#include "compress/codec_registry.h"

using namespace cmpi::compress;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const CodecRegistry registry = CodecRegistry::with_builtin_codecs();
  const auto& specs = cmpi::fuzz::codec_fuzz_specs();
  std::vector<std::vector<float>> inputs(3);
  for (int i = 0; i < 100; ++i) inputs[0].push_back(std::sin(0.1f * i) * 3.0f);
  inputs[1].assign(200, 0.0f);
  for (int i = 0; i < 200; i += 17) inputs[1][i] = float(i) - 90.0f;
  inputs[2] = {1.0f, -2.5f, 0.0f, 1e-30f, 3e38f, std::numeric_limits<float>::infinity(), 7.0f};
  for (size_t s = 0; s < specs.size(); ++s) {
    for (size_t k = 0; k < inputs.size(); ++k) {
      auto codec = registry.create(CodecSpec::parse(specs[s]));
      const auto& values = inputs[k];
      std::vector<uint8_t> payload;
      try {
        payload = codec->encode(values.data(), values.size());
      } catch (const std::exception&) {
        continue;  // codecs that refuse non-finite input
      }
      const PayloadHeader header = read_payload_header(payload.data(), payload.size());
      std::string seed = {char(s),
                          char(1),
                          char(header.flags & 0xff),
                          char(header.flags >> 8),
                          char(values.size() & 0xff),
                          char(values.size() >> 8)};
      seed.append(reinterpret_cast<const char*>(payload.data()) + kPayloadHeaderBytes,
                  payload.size() - kPayloadHeaderBytes);
      std::ofstream(dir + "/" + std::to_string(s) + "-" + std::to_string(k), std::ios::binary)
          << seed;
    }
  }
  return 0;
}
