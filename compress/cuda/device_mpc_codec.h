// The device mpc codec: the order of the steps of mpc_payload_steps.h
// (encode) and mpc_decode_steps.h (decode) and the scratch they share,
// written once for any Executor (device_zfp_codec.h explains Executors).
// Its payloads are MpcCodec's for the same spec, byte for byte (the plan of
// every chunk is chosen as the CPU chooses it); threads and simd, which
// change only the CPU's speed, are accepted and ignored.
#pragma once

#include <cstdint>
#include <memory>

#include "compress/codec_registry.h"
#include "compress/cuda/device_codec.h"
#include "compress/cuda/mpc_decode_steps.h"
#include "compress/cuda/mpc_payload_steps.h"
#include "compress/mpc_codec.h"

namespace cmpi::compress::cuda {

namespace mpc_steps {
struct ChoosePlan {
  const float* in;
  MpcPayloadShape shape;
  MpcEncodeScratch scratch;
  CMPI_HD void operator()(uint64_t k) const { mpc_choose_plan_step(in, shape, scratch, k); }
};
struct Transform {
  const float* in;
  MpcPayloadShape shape;
  MpcEncodeScratch scratch;
  CMPI_HD void operator()(uint64_t g) const { mpc_transform_step(in, shape, scratch, g); }
};
struct SizeGroup {
  MpcPayloadShape shape;
  MpcEncodeScratch scratch;
  CMPI_HD void operator()(uint64_t q) const { mpc_size_group_step(shape, scratch, q); }
};
struct SizeChunk {
  MpcPayloadShape shape;
  MpcEncodeScratch scratch;
  CMPI_HD void operator()(uint64_t k) const { mpc_size_chunk_step(shape, scratch, k); }
};
struct LayOut {
  MpcPayloadShape shape;
  MpcEncodeScratch scratch;
  HeaderTemplate header;
  uint8_t* payload;
  uint64_t* size_out;
  CMPI_HD void operator()() const { mpc_lay_out_step(shape, scratch, header, payload, size_out); }
};
struct WriteGroup {
  MpcPayloadShape shape;
  MpcEncodeScratch scratch;
  uint8_t* payload;
  CMPI_HD void operator()(uint64_t q) const { mpc_write_group_step(shape, scratch, payload, q); }
};
struct WriteBlock {
  const float* in;
  MpcPayloadShape shape;
  MpcEncodeScratch scratch;
  uint8_t* payload;
  CMPI_HD void operator()(uint64_t g) const {
    mpc_write_block_step(in, shape, scratch, payload, g);
  }
};
struct Check {
  MpcPayloadShape shape;
  HeaderTemplate header;
  const uint8_t* payload;
  uint64_t size;
  MpcDecodeScratch scratch;
  uint32_t* status;
  CMPI_HD void operator()() const {
    *status = mpc_check_payload(shape, header, payload, size, scratch);
  }
};
struct WalkChunk {
  MpcPayloadShape shape;
  const uint8_t* payload;
  MpcDecodeScratch scratch;
  uint32_t* status;
  CMPI_HD void operator()(uint64_t k) const {
    mpc_walk_chunk_step(shape, payload, scratch, status, k);
  }
};
struct DecodeGroup {
  MpcPayloadShape shape;
  const uint8_t* payload;
  MpcDecodeScratch scratch;
  uint32_t* status;
  float* out;
  CMPI_HD void operator()(uint64_t q) const {
    mpc_decode_group_step(shape, payload, scratch, status, out, q);
  }
};
struct UndoStride {
  MpcPayloadShape shape;
  const uint8_t* payload;
  MpcDecodeScratch scratch;
  const uint32_t* status;
  float* out;
  CMPI_HD void operator()(uint64_t i) const {
    mpc_undo_stride_step(shape, payload, scratch, status, out, i);
  }
};
}  // namespace mpc_steps

// Bytes of scratch, each part 8-byte aligned.
struct MpcScratchLayout {
  uint64_t plans, planes, block_offsets, groups, group_offsets, chunk_sizes, chunk_offsets, total;
  explicit MpcScratchLayout(const MpcPayloadShape& s) {
    auto round8 = [](uint64_t b) { return (b + 7) / 8 * 8; };
    plans = 0;
    planes = plans + round8(sizeof(MpcChunkPlan) * s.chunk_count());
    block_offsets = planes + 4 * kMpcBlockWords * s.block_slots();
    groups = block_offsets + round8(sizeof(MpcBlockOffsets) * s.block_slots());
    group_offsets = groups + round8(sizeof(MpcGroupInfo) * s.group_slots());
    chunk_sizes = group_offsets + 8 * s.group_slots();
    chunk_offsets = chunk_sizes + 8 * s.chunk_count();
    total = chunk_offsets + 8 * s.chunk_count() + 8;
  }
};

template <class Executor>
class DeviceMpcCodec final : public DeviceCodec {
 public:
  DeviceMpcCodec(Device& device, Executor executor, const CodecSpec& spec)
      : executor_(executor), scratch_(device) {
    twin_ = make_codec(spec);
    auto* mpc = dynamic_cast<MpcCodec*>(twin_.get());
    if (mpc == nullptr) throw CodecError("device codec " + spec.to_string() + ": not mpc");
    chunk_ = mpc->chunk_floats();
    dim_ = mpc->dim();
  }

  const Codec& cpu_twin() const override { return *twin_; }
  uint64_t max_payload_bytes(uint64_t n) const override { return shape(n).max_payload_bytes(); }

  void encode(const float* in, uint64_t n, uint8_t* out, uint64_t* size_out,
              StreamId stream) override {
    const MpcPayloadShape s = shape(n);
    const MpcScratchLayout layout(s);
    uint8_t* base = scratch_.get(stream, layout.total);
    MpcEncodeScratch scratch;
    scratch.plans = reinterpret_cast<MpcChunkPlan*>(base + layout.plans);
    scratch.planes = reinterpret_cast<uint32_t*>(base + layout.planes);
    scratch.block_offsets = reinterpret_cast<MpcBlockOffsets*>(base + layout.block_offsets);
    scratch.groups = reinterpret_cast<MpcGroupInfo*>(base + layout.groups);
    scratch.group_offsets = reinterpret_cast<uint64_t*>(base + layout.group_offsets);
    scratch.chunk_sizes = reinterpret_cast<uint64_t*>(base + layout.chunk_sizes);
    scratch.chunk_offsets = reinterpret_cast<uint64_t*>(base + layout.chunk_offsets);
    executor_.for_each(stream, s.chunk_count(), mpc_steps::ChoosePlan{in, s, scratch});
    executor_.for_each(stream, s.block_slots(), mpc_steps::Transform{in, s, scratch});
    executor_.for_each(stream, s.group_slots(), mpc_steps::SizeGroup{s, scratch});
    executor_.for_each(stream, s.chunk_count(), mpc_steps::SizeChunk{s, scratch});
    executor_.single(stream,
                     mpc_steps::LayOut{s, scratch, header_template(*twin_, n), out, size_out});
    executor_.for_each(stream, s.group_slots(), mpc_steps::WriteGroup{s, scratch, out});
    executor_.for_each(stream, s.block_slots(), mpc_steps::WriteBlock{in, s, scratch, out});
  }

  void decode(const uint8_t* in, uint64_t size, float* out, uint64_t n, uint32_t* status_out,
              StreamId stream) override {
    const MpcPayloadShape s = shape(n);
    auto* base =
        reinterpret_cast<uint64_t*>(scratch_.get(stream, 8 * (s.chunk_count() + s.group_slots())));
    const MpcDecodeScratch scratch{base, base + s.chunk_count()};
    executor_.single(
        stream, mpc_steps::Check{s, header_template(*twin_, n), in, size, scratch, status_out});
    executor_.for_each(stream, s.chunk_count(), mpc_steps::WalkChunk{s, in, scratch, status_out});
    executor_.for_each(stream, s.group_slots(),
                       mpc_steps::DecodeGroup{s, in, scratch, status_out, out});
    executor_.for_each(stream, 32 * s.chunk_count(),
                       mpc_steps::UndoStride{s, in, scratch, status_out, out});
  }

 private:
  MpcPayloadShape shape(uint64_t n) const {
    MpcPayloadShape s;
    s.n = n, s.chunk = chunk_, s.dim = dim_;
    return s;
  }

  Executor executor_;
  StreamScratch scratch_;
  std::unique_ptr<Codec> twin_;
  uint64_t chunk_ = 65536;
  unsigned dim_ = 1;
};

}  // namespace cmpi::compress::cuda
