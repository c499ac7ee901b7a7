// block_sparse: lossless. The array is cut into blocks of `block` floats
// (the last one shorter); only blocks holding a non-zero bit pattern are
// sent, with their block numbers. Bit-exact (-0.0 and NaN payloads are
// non-zero patterns and travel). The body:
//   offset  size         field
//   0       8            k             non-zero blocks, <= ceil(n / block)
//   8       1            index form    IndexForm (sparse_indices.h) of block numbers
//   9       8            index bytes   length of the index stream
//   17      index bytes  block numbers strictly increasing
//   ...                  values        the k blocks, float32, in block order
// The header echoes `block`, so a decoder with another block size refuses.
//
// As a policy rule's codec on an allreduce it also selects the block-sparse
// allreduce (comm/algorithms/block_sparse_allreduce.cpp), which moves the
// same blocks without the payload framing; `select` says when:
//   auto    (default) measure the fraction of non-zero blocks and take the
//           block-sparse path only below the crossover the communicator
//           calibrated for this group, else the route of the next matching
//           policy rule (the raw allreduce when none matches);
//   always  block-sparse whatever the density.
// Other operations with this codec run the generic compressed algorithms.
// Spec: {name: block_sparse, block: 256, select: auto}.
#pragma once

#include <cstring>
#include <vector>

#include "compress/codec.h"

namespace cmpi::compress {

// True when p[0..len) holds any bit pattern other than +0.0.
inline bool block_has_nonzero_bits(const float* p, size_t len) {
  uint32_t any = 0;
  for (size_t i = 0; i < len; ++i) {
    uint32_t bits;
    std::memcpy(&bits, p + i, sizeof bits);
    any |= bits;
  }
  return any != 0;
}

class BlockSparseCodec final : public Codec {
 public:
  enum class Select { kAuto, kAlways };

  explicit BlockSparseCodec(const CodecSpec& spec);
  CodecId id() const override { return CodecId::kBlockSparse; }
  bool lossless() const override { return true; }
  size_t block_floats() const { return block_; }
  Select select() const { return select_; }

 protected:
  size_t max_body_bytes(size_t n) const override;
  std::array<uint32_t, 4> header_params() const override { return {uint32_t(block_), 0, 0, 0}; }
  size_t encode_body(const float* in, size_t n, uint8_t* out, size_t capacity,
                     uint16_t& flags) override;
  void decode_body(const uint8_t* in, size_t size, float* out, size_t n,
                   uint16_t flags) const override;

 private:
  size_t block_;
  Select select_;
  std::vector<uint64_t> nonzero_;  // encode scratch
};

}  // namespace cmpi::compress
