// The device fp16 and bf16 codecs: payload = header + two little-endian
// bytes per float, the CPU cast codecs' bytes (half_float.h's conversions,
// CMPI_HD, run by both). Thread per value; the size is known up front.
#pragma once

#include <cstdint>
#include <memory>

#include "compress/codec_registry.h"
#include "compress/cuda/device_codec.h"
#include "compress/half_float.h"

namespace cmpi::compress::cuda {

namespace cast_steps {
struct Header {
  HeaderTemplate header;
  uint64_t body;
  uint8_t* payload;
  uint64_t* size_out;
  CMPI_HD void operator()() const {
    finish_payload_header(header, body, payload);
    *size_out = kHeaderBytes + body;
  }
};
struct Narrow {
  const float* in;
  uint8_t* body;
  bool bf16;
  CMPI_HD void operator()(uint64_t i) const {
    const uint16_t half = bf16 ? bf16_from_float(in[i]) : fp16_from_float(in[i]);
    body[2 * i] = uint8_t(half), body[2 * i + 1] = uint8_t(half >> 8);
  }
};
struct Check {
  HeaderTemplate header;
  const uint8_t* payload;
  uint64_t size, n;
  uint32_t* status;
  CMPI_HD void operator()() const {
    *status = payload_header_matches(header, payload, size) && size == kHeaderBytes + 2 * n
                  ? kDecodeOk
                  : kDecodeBadHeader;
  }
};
struct Widen {
  const uint8_t* body;
  const uint32_t* status;
  float* out;
  bool bf16;
  CMPI_HD void operator()(uint64_t i) const {
    if (*status != kDecodeOk) return;
    const uint16_t half = uint16_t(body[2 * i] | (body[2 * i + 1] << 8));
    out[i] = bf16 ? float_from_bf16(half) : float_from_fp16(half);
  }
};
}  // namespace cast_steps

template <class Executor>
class DeviceCastCodec final : public DeviceCodec {
 public:
  DeviceCastCodec(Executor executor, const CodecSpec& spec)
      : executor_(executor), twin_(make_codec(spec)), bf16_(spec.name() == "bf16") {}

  const Codec& cpu_twin() const override { return *twin_; }
  uint64_t max_payload_bytes(uint64_t n) const override { return kHeaderBytes + 2 * n; }

  void encode(const float* in, uint64_t n, uint8_t* out, uint64_t* size_out,
              StreamId stream) override {
    executor_.single(stream, cast_steps::Header{header_template(*twin_, n), 2 * n, out, size_out});
    executor_.for_each(stream, n, cast_steps::Narrow{in, out + kHeaderBytes, bf16_});
  }
  void decode(const uint8_t* in, uint64_t size, float* out, uint64_t n, uint32_t* status_out,
              StreamId stream) override {
    executor_.single(stream,
                     cast_steps::Check{header_template(*twin_, n), in, size, n, status_out});
    executor_.for_each(stream, n, cast_steps::Widen{in + kHeaderBytes, status_out, out, bf16_});
  }

 private:
  Executor executor_;
  std::unique_ptr<Codec> twin_;
  bool bf16_;
};

}  // namespace cmpi::compress::cuda
