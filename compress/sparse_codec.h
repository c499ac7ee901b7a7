// SparseCodec: the common half of the sparsifiers. Each one decides which
// positions to keep (and may rescale their values); all of them share one
// body format (sparse_body.h) and therefore one decoder, which needs no
// codec parameter: a topk payload decodes the same whatever the decoder's
// ratio, so the header echoes no parameters.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "compress/codec.h"
#include "compress/sparse_body.h"

namespace cmpi::compress {

class SparseCodec : public Codec {
 public:
  using Codec::Codec;
  bool lossless() const override { return false; }

 protected:
  void decode_body(const uint8_t* in, size_t size, float* out, size_t n,
                   uint16_t flags) const override {
    if (flags != 0) throw DecodeError("flags", name() + " payload has flags set");
    read_sparse_body(in, size, out, n);
  }

  // Writes the kept positions and values gathered in kept_index_/kept_value_.
  size_t write_kept(size_t n, uint8_t* out) const {
    return write_sparse_body(kept_index_.data(), kept_value_.data(), kept_index_.size(), n, out);
  }

  // Scratch reused across encodes (encode is the non-const side).
  std::vector<uint64_t> kept_index_;
  std::vector<float> kept_value_;
};

// The float's bits with the sign cleared, as an unsigned integer: ordered like
// |x| for finite values, with infinities and then NaNs above every finite
// value, so that topk and threshold rank them without floating-point compares
// (and keep non-finite entries rather than lose them).
inline uint32_t magnitude_key(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits & 0x7fffffffu;
}

// k = max(1, ceil(ratio * n)) capped at n (0 for n = 0): the count kept by
// topk and randomk.
size_t kept_count_for_ratio(double ratio, size_t n);

// Reads and checks `ratio` (0 < ratio <= 1) from a sparsifier's spec.
double sparsifier_ratio(const CodecSpec& spec);

}  // namespace cmpi::compress
