// The device zfp codec (mode rate): the order of the steps of
// zfp_payload_steps.h and the scratch they share, written once for any
// Executor. An Executor runs a functor for every index of a range
// (for_each(stream, count, f): f(i) for i < count, in any order or in
// parallel) or once (single(stream, f)), queued on a stream: CudaExecutor
// launches kernels, FakeDevice's executor queues host loops.
#pragma once

#include <cstdint>
#include <memory>

#include "compress/codec_registry.h"
#include "compress/cuda/device_codec.h"
#include "compress/cuda/zfp_payload_steps.h"
#include "compress/zfp_codec.h"
#include "compress/zfp_fixed_rate.h"

namespace cmpi::compress::cuda {

namespace zfp_steps {
struct FlagNonfinite {
  const float* in;
  ZfpPayloadShape shape;
  uint32_t* flags;
  CMPI_HD void operator()(uint64_t i) const { zfp_flag_nonfinite(in, shape, flags, i); }
};
struct LayOut {
  ZfpPayloadShape shape;
  const uint32_t* flags;
  HeaderTemplate header;
  uint8_t* payload;
  uint64_t* offsets;
  uint64_t* size_out;
  CMPI_HD void operator()() const {
    zfp_lay_out_payload(shape, flags, header, payload, offsets, size_out);
  }
};
struct ZeroStream {
  ZfpPayloadShape shape;
  uint8_t* payload;
  const uint64_t* offsets;
  CMPI_HD void operator()(uint64_t g) const { zfp_zero_stream_bits(shape, payload, offsets, g); }
};
struct EncodeBlock {
  const float* in;
  ZfpPayloadShape shape;
  uint8_t* payload;
  const uint64_t* offsets;
  CMPI_HD void operator()(uint64_t g) const {
    zfp_encode_block_step(in, shape, payload, offsets, g);
  }
};
struct CopyRaw {
  const float* in;
  ZfpPayloadShape shape;
  uint8_t* payload;
  const uint64_t* offsets;
  CMPI_HD void operator()(uint64_t g) const { zfp_copy_raw_block(in, shape, payload, offsets, g); }
};
struct Check {
  ZfpPayloadShape shape;
  HeaderTemplate header;
  const uint8_t* payload;
  uint64_t size;
  uint64_t* offsets;
  uint32_t* status;
  CMPI_HD void operator()() const {
    *status = zfp_check_payload(shape, header, payload, size, offsets);
  }
};
struct DecodeBlock {
  const uint8_t* payload;
  ZfpPayloadShape shape;
  const uint64_t* offsets;
  const uint32_t* status;
  float* out;
  CMPI_HD void operator()(uint64_t g) const {
    zfp_decode_block_step(payload, shape, offsets, status, out, g);
  }
};
}  // namespace zfp_steps

// libzfp's stream word in bits (8 in Debian's build), which the chunk sizes
// follow; defined in device_codec.cpp so that device code needs no libzfp.
uint32_t zfp_stream_word_bits();

template <class Executor>
class DeviceZfpCodec final : public DeviceCodec {
 public:
  DeviceZfpCodec(Device& device, Executor executor, const CodecSpec& spec)
      : device_(device), executor_(executor), scratch_(device) {
    auto twin = make_codec(spec);
    auto* zfp = dynamic_cast<ZfpCodec*>(twin.get());
    if (zfp == nullptr || zfp->mode() != ZfpMode::kRate ||
        spec.get_string("nonfinite", "raw") != "raw")
      throw CodecError("device codec " + spec.to_string() +
                       ": the device runs zfp in mode rate with nonfinite: raw only");
    twin_ = std::move(twin);
    chunk_ = zfp->chunk_floats();
    maxbits_ = zfp_fixed_rate::block_bits(spec.get_double("rate", 16.0));
    word_bits_ = zfp_stream_word_bits();
  }

  const Codec& cpu_twin() const override { return *twin_; }
  uint64_t max_payload_bytes(uint64_t n) const override { return shape(n).max_payload_bytes(); }

  void encode(const float* in, uint64_t n, uint8_t* out, uint64_t* size_out,
              StreamId stream) override {
    const ZfpPayloadShape s = shape(n);
    const uint64_t count = s.chunk_count();
    uint8_t* scratch = scratch_.get(stream, 12 * count + 8);
    auto* offsets = reinterpret_cast<uint64_t*>(scratch);
    auto* flags = reinterpret_cast<uint32_t*>(scratch + 8 * count);
    device_.fill(flags, 0, 4 * count, stream);
    executor_.for_each(stream, n, zfp_steps::FlagNonfinite{in, s, flags});
    executor_.single(
        stream, zfp_steps::LayOut{s, flags, header_template(*twin_, n), out, offsets, size_out});
    if (!s.blocks_own_words())
      executor_.for_each(stream, s.block_slots(), zfp_steps::ZeroStream{s, out, offsets});
    executor_.for_each(stream, s.block_slots(), zfp_steps::EncodeBlock{in, s, out, offsets});
    executor_.for_each(stream, s.block_slots(), zfp_steps::CopyRaw{in, s, out, offsets});
  }

  void decode(const uint8_t* in, uint64_t size, float* out, uint64_t n, uint32_t* status_out,
              StreamId stream) override {
    const ZfpPayloadShape s = shape(n);
    auto* offsets = reinterpret_cast<uint64_t*>(scratch_.get(stream, 8 * s.chunk_count() + 8));
    executor_.single(
        stream, zfp_steps::Check{s, header_template(*twin_, n), in, size, offsets, status_out});
    executor_.for_each(stream, s.block_slots(),
                       zfp_steps::DecodeBlock{in, s, offsets, status_out, out});
  }

 private:
  ZfpPayloadShape shape(uint64_t n) const {
    ZfpPayloadShape s;
    s.n = n, s.chunk = chunk_, s.maxbits = maxbits_, s.word_bits = word_bits_;
    return s;
  }

  Device& device_;
  Executor executor_;
  StreamScratch scratch_;
  std::unique_ptr<Codec> twin_;
  uint64_t chunk_ = 0;
  uint32_t maxbits_ = 0;
  uint32_t word_bits_ = 8;
};

}  // namespace cmpi::compress::cuda
