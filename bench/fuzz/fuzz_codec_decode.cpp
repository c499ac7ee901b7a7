// Every codec's decode (compress/codec.h) on arbitrary bytes: it decodes or
// throws DecodeError, never touching memory outside the payload and the n
// output floats (both are exact-size heap buffers, so AddressSanitizer sees
// one byte too far) and never allocating without bound.
//
// Input: byte 0 picks the codec settings (codec_fuzz_specs.h), byte 1's low
// bit the mode, bytes 2-3 the flags, bytes 4-5 n (the floats the caller
// expects, up to 65535); the rest is
//   mode 0: a whole payload, header included (what a peer could send);
//   mode 1: a body, behind the header this decoder expects for n floats
//           with those flags, so the fuzzer reaches the body parsers at once.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench/fuzz/codec_fuzz_specs.h"
#include "bench/fuzz/fuzz_check.h"
#include "compress/codec.h"
#include "compress/codec_registry.h"

using namespace cmpi::compress;

namespace {

const std::vector<std::unique_ptr<Codec>>& codecs() {
  static const std::vector<std::unique_ptr<Codec>> built = [] {
    const CodecRegistry registry = CodecRegistry::with_builtin_codecs();
    std::vector<std::unique_ptr<Codec>> out;
    std::vector<std::string> covered;
    for (const auto& text : cmpi::fuzz::codec_fuzz_specs()) {
      out.push_back(registry.create(CodecSpec::parse(text)));
      covered.push_back(out.back()->name());
    }
    // A codec added to the registry must be added to the fuzzed settings.
    for (const auto& name : registry.names())
      if (std::find(covered.begin(), covered.end(), name) == covered.end())
        cmpi::fuzz::defect("codec '" + name + "' is not in codec_fuzz_specs.h");
    return out;
  }();
  return built;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr size_t kPrefix = 6;
  if (size < kPrefix) return 0;
  const Codec& codec = *codecs()[data[0] % codecs().size()];
  const bool framed = data[1] & 1;
  const uint16_t flags = uint16_t(data[2] | data[3] << 8);
  const size_t n = size_t(data[4]) | size_t(data[5]) << 8;
  const uint8_t* rest = data + kPrefix;
  const size_t rest_size = size - kPrefix;

  std::vector<uint8_t> payload;
  if (framed) {
    PayloadHeader header = codec.header_for(n);
    header.flags = flags;
    header.body_bytes = rest_size;
    payload.resize(kPayloadHeaderBytes + rest_size);
    write_payload_header(header, payload.data());
    if (rest_size) std::memcpy(payload.data() + kPayloadHeaderBytes, rest, rest_size);
  } else {
    payload.assign(rest, rest + rest_size);
  }
  // Exact-size copies: an access past either end is reported.
  std::unique_ptr<uint8_t[]> in(new uint8_t[payload.size() + (payload.empty() ? 1 : 0)]);
  if (!payload.empty()) std::memcpy(in.get(), payload.data(), payload.size());
  std::unique_ptr<float[]> out(new float[n ? n : 1]);
  try {
    codec.decode(in.get(), payload.size(), out.get(), n);
  } catch (const DecodeError&) {
  }
  return 0;
}
