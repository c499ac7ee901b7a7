// zfp: lossy (or reversible) compression of float arrays through libzfp, or
// in mode rate through our own bit-identical coder (zfp_fixed_rate.h), cut
// into independent chunks so that encode and decode run in parallel.
//
// Spec: {name: zfp, mode: rate|accuracy|precision|reversible, rate: R,
//        tolerance: T, precision: P, chunk: C, threads: N, nonfinite: raw|fail,
//        impl: native|libzfp}
//   mode       default rate. Each mode takes only its own parameter:
//   rate       (0, 32] bits per value, default 16. libzfp codes 1-D blocks of
//              4 floats in round(4R) bits, at least 9, so rates below 2.25
//              act as 2.25. No pointwise bound: on Gaussian data the relative
//              RMSE is 13.8 * 2^-R for R = 5..26 (0.97 at R = 4); tests assert
//              it falls with every added bit and stays <= 20 * 2^-R.
//   tolerance  > 0, required for mode accuracy: |x - x'| <= T for every value,
//              down to tolerances near the float resolution of the largest
//              magnitude in the value's 4-value block (tested to T = 1e-5 with
//              |x| up to ~150, where half an ulp is 7.6e-6).
//   precision  1..32, required for mode precision: P bit planes of each
//              block are kept, so |x - x'| <= max(2^(e-P+4), 2^(e-23)) where
//              2^(e-1) <= max |value| in the 4-value block < 2^e (measured
//              worst: 10 * 2^(e-P) for P <= 27; asserted in tests).
//   reversible lossless: bit-exact for every finite float, -0.0 and
//              denormals included.
//   chunk      floats per independently coded chunk, 1..2^26, default 65536.
//   threads    OpenMP threads for encode and decode, default 1, 0 = all cores.
//   impl       who codes mode rate: native (default; zfp_fixed_rate.h, ~10x
//              libzfp's speed) or libzfp. Both write and read the same bytes,
//              so payloads interchange: impl is a local choice, not a format.
//              Other modes are libzfp only (impl: native there is an error).
//   nonfinite  raw (default): a chunk holding NaN or +-Inf is sent as raw
//              floats (bit-exact) and counted in nonfinite_raw_chunks(); fail: encode throws
//              std::invalid_argument naming the first non-finite index. (libzfp on non-finite input
//              is undefined behaviour, so such a chunk never reaches it.)
// A chunk is also sent raw when zfp's output would be no smaller.
//
// Body: a chunk table of one little-endian u32 per chunk (bit 31: raw chunk,
// bits 0..30: the chunk's byte size), then the chunks back to back. A raw
// chunk holds 4 bytes per float; a zfp chunk is a libzfp stream of whole
// libzfp words (bytes in Debian's build, else 64-bit host-order words)
// smaller than the raw chunk would be.
// The header params carry the mode, the chunk size and libzfp's compact mode
// word, so a decoder with other settings rejects the payload.
#pragma once

#include <cstdint>

#include "compress/codec.h"

namespace cmpi::compress {

enum class ZfpMode : uint32_t { kRate = 1, kAccuracy = 2, kPrecision = 3, kReversible = 4 };

class ZfpCodec final : public Codec {
 public:
  explicit ZfpCodec(const CodecSpec& spec);
  CodecId id() const override { return CodecId::kZfp; }
  bool lossless() const override { return mode_ == ZfpMode::kReversible; }

  ZfpMode mode() const { return mode_; }
  // Whether rate mode runs the native coder (impl: native) rather than libzfp.
  bool native() const { return native_; }
  size_t chunk_floats() const { return chunk_; }
  // Threads encode/decode use (0 in the spec resolved to the core count).
  int threads() const;

 protected:
  size_t max_body_bytes(size_t n) const override;
  std::array<uint32_t, 4> header_params() const override;
  size_t encode_body(const float* in, size_t n, uint8_t* out, size_t capacity,
                     uint16_t& flags) override;
  void decode_body(const uint8_t* in, size_t size, float* out, size_t n,
                   uint16_t flags) const override;

 private:
  ZfpMode mode_ = ZfpMode::kRate;
  double rate_ = 16;
  double tolerance_ = 0;
  uint32_t precision_ = 0;
  size_t chunk_ = 65536;
  int threads_ = 1;
  bool fail_on_nonfinite_ = false;
  uint64_t zfp_mode_word_ = 0;  // libzfp's compact encoding of the settings
  bool native_ = false;         // mode rate through zfp_fixed_rate, not libzfp
  uint32_t block_bits_ = 0;     // mode rate: bits per 4-value block
};

}  // namespace cmpi::compress
