// fp16 / bf16 casts: the conversions live inline in the header; here are the
// span loops (written so the compiler vectorizes them) and the codec body,
// which goes through a small aligned block so the payload bytes need no
// particular alignment.
#include "compress/cast_codecs.h"

#include <algorithm>
#include <string>

namespace cmpi::compress {
namespace {

// Elements converted per step between the payload bytes and host-order
// uint16_t values: 4 KiB of halves, comfortably inside L1.
constexpr size_t kBlock = 2048;

constexpr bool host_is_little_endian() {
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__)
  return __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
#else
  return true;
#endif
}

void store_le16(const uint16_t* in, size_t n, uint8_t* out) {
  if (host_is_little_endian()) {
    std::memcpy(out, in, 2 * n);
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = static_cast<uint8_t>(in[i]);
    out[2 * i + 1] = static_cast<uint8_t>(in[i] >> 8);
  }
}

void load_le16(const uint8_t* in, size_t n, uint16_t* out) {
  if (host_is_little_endian()) {
    std::memcpy(out, in, 2 * n);
    return;
  }
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint16_t>(in[2 * i] | (in[2 * i + 1] << 8));
}

}  // namespace

void floats_to_fp16(const float* in, size_t n, uint16_t* out) {
#pragma omp simd
  for (size_t i = 0; i < n; ++i) out[i] = fp16_from_float(in[i]);
}

void fp16_to_floats(const uint16_t* in, size_t n, float* out) {
#pragma omp simd
  for (size_t i = 0; i < n; ++i) out[i] = float_from_fp16(in[i]);
}

void floats_to_bf16(const float* in, size_t n, uint16_t* out) {
#pragma omp simd
  for (size_t i = 0; i < n; ++i) out[i] = bf16_from_float(in[i]);
}

void bf16_to_floats(const uint16_t* in, size_t n, float* out) {
#pragma omp simd
  for (size_t i = 0; i < n; ++i) out[i] = float_from_bf16(in[i]);
}

HalfCastCodec::HalfCastCodec(const CodecSpec& spec) : Codec(spec) {
  spec.require_only({});
}

size_t HalfCastCodec::encode_body(const float* in, size_t n, uint8_t* out, size_t, uint16_t&) {
  alignas(64) uint16_t block[kBlock];
  for (size_t start = 0; start < n; start += kBlock) {
    const size_t count = std::min(kBlock, n - start);
    narrow(in + start, count, block);
    store_le16(block, count, out + 2 * start);
  }
  return 2 * n;
}

void HalfCastCodec::decode_body(const uint8_t* in, size_t size, float* out, size_t n,
                                uint16_t flags) const {
  if (flags != 0)
    throw DecodeError("flags",
                      name() + " payload has flags " + std::to_string(flags) + ", expected 0");
  if (size / 2 != n || size % 2 != 0)
    throw DecodeError("body", name() + " body of " + std::to_string(size) + " bytes for " +
                                  std::to_string(n) + " floats (expected " + std::to_string(2 * n) +
                                  ")");
  alignas(64) uint16_t block[kBlock];
  for (size_t start = 0; start < n; start += kBlock) {
    const size_t count = std::min(kBlock, n - start);
    load_le16(in + 2 * start, count, block);
    widen(block, count, out + start);
  }
}

}  // namespace cmpi::compress
