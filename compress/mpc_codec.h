// mpc: lossless, our implementation of the MPC algorithm (Yang, Mukka,
// Hesaaraki, Burtscher, IEEE Cluster 2015) on the floats' 32-bit patterns, so
// every value (NaN payloads, -0.0, denormals, infinities) round-trips exactly.
//
// Spec: {name: mpc, dim: 1..32 | auto (default 1), chunk: floats per chunk, a
// multiple of 32 in 32..2^24 (default 65536), threads: 1 (default), 0 = all
// cores, simd: auto (default) | scalar | ssse3 | avx2}. dim is the data's
// dimensionality: each value is predicted by the one `dim` positions earlier.
// Each chunk may instead skip that prediction when a sample of it says the
// chunk compresses better without (noise-like data: gradients, activations);
// dim: auto also tries the strides 1, 2, 4, 8, 16 and 32 per chunk. The
// choice travels in the chunk (mpc_chunk_plan.h), so any mpc decoder with the
// same dim and chunk decodes it. Chunks are independent: they are encoded and
// decoded in parallel, and a communicator may pipeline them. threads and simd
// change speed, never bytes.
//
// Body: a chunk table (one u32 per chunk: its encoded bytes) followed by the
// chunks (mpc_chunk.h), chunk c holding floats [c * chunk, (c + 1) * chunk).
// Worst case the body is 4 bytes per chunk larger than the raw floats. The
// header's params are {dim (0 = auto), chunk, chunk format revision (2), 0}.
#pragma once

#include "compress/codec.h"
#include "compress/simd_level.h"

namespace cmpi::compress {

class MpcCodec final : public Codec {
 public:
  explicit MpcCodec(const CodecSpec& spec);
  CodecId id() const override { return CodecId::kMpc; }
  bool lossless() const override { return true; }

  // The stride given, 0 for auto.
  unsigned dim() const { return dim_; }
  size_t chunk_floats() const { return chunk_; }
  // The per-call thread count (threads: 0 resolved to the OpenMP maximum).
  int threads() const;
  SimdLevel simd_level() const { return level_; }

 protected:
  size_t max_body_bytes(size_t n) const override;
  std::array<uint32_t, 4> header_params() const override;
  size_t encode_body(const float* in, size_t n, uint8_t* out, size_t capacity,
                     uint16_t& flags) override;
  void decode_body(const uint8_t* in, size_t size, float* out, size_t n,
                   uint16_t flags) const override;

 private:
  size_t chunk_count(size_t n) const { return (n + chunk_ - 1) / chunk_; }
  size_t chunk_words(size_t n, size_t c) const;

  unsigned dim_ = 1;
  size_t chunk_ = 65536;
  int threads_ = 1;
  SimdLevel level_ = SimdLevel::kScalar;
};

}  // namespace cmpi::compress
