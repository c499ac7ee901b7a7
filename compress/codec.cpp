#include "compress/codec.h"

#include <stdexcept>

namespace cmpi::compress {

size_t Codec::encode(const float* in, size_t n, uint8_t* out, size_t capacity) {
  if (capacity < max_encoded_bytes(n))
    throw std::invalid_argument("codec " + spec_.to_string() + ": output capacity " +
                                std::to_string(capacity) + " < max_encoded_bytes(" +
                                std::to_string(n) + ") = " + std::to_string(max_encoded_bytes(n)));
  if (in == nullptr && n != 0)
    throw std::invalid_argument("codec " + spec_.to_string() + ": null input");
  PayloadHeader header;
  header.codec = id();
  header.params = header_params();
  header.element_count = n;
  header.body_bytes =
      encode_body(in, n, out + kPayloadHeaderBytes, capacity - kPayloadHeaderBytes, header.flags);
  write_payload_header(header, out);
  return kPayloadHeaderBytes + header.body_bytes;
}

void Codec::restore_random_state(const std::vector<uint64_t>& words) {
  if (!words.empty())
    throw std::invalid_argument("codec " + spec_.to_string() +
                                " draws no random numbers, given a random state of " +
                                std::to_string(words.size()) + " words");
}

std::vector<uint8_t> Codec::encode(const float* in, size_t n) {
  std::vector<uint8_t> out(max_encoded_bytes(n));
  out.resize(encode(in, n, out.data(), out.size()));
  return out;
}

void Codec::decode(const uint8_t* in, size_t size, float* out, size_t n) const {
  PayloadHeader header = read_payload_header(in, size);
  if (header.codec != id())
    throw DecodeError("codec", std::string("payload was encoded by '") +
                                   codec_id_name(header.codec) + "', decoder is '" +
                                   codec_id_name(id()) + "'");
  if (header.params != header_params())
    throw DecodeError("params", "payload parameters differ from decoder " + spec_.to_string());
  if (header.element_count != n)
    throw DecodeError("element_count", "payload holds " + std::to_string(header.element_count) +
                                           " elements, caller expects " + std::to_string(n));
  if (out == nullptr && n != 0) throw DecodeError("output", "null output buffer");
  decode_body(in + kPayloadHeaderBytes, header.body_bytes, out, n, header.flags);
}

}  // namespace cmpi::compress
