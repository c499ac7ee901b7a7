// Codec: turns n floats into a self-describing payload and back.
//
// The base class owns the payload header (payload.h): encode() writes it
// around the body the concrete codec produces, decode() validates every header
// field against what this codec and the caller expect before handing the body
// to the codec, which must in turn validate the body against its size. A codec
// therefore only implements the body format; any byte string given to
// decode() either decodes or throws DecodeError, never touching memory
// outside [in, in + size) and [out, out + n).
//
// encode() may change codec state (random generators of stochastic codecs),
// decode() may not: one encoder instance per sender, decoders shareable.
//
// A lossy codec that cannot code NaN or infinity and sends such input raw
// instead (zfp with nonfinite: raw) counts the chunks it sent raw for that
// reason in nonfinite_raw_chunks(), cumulative over the encoder's life: the
// caller reads it before and after an encode() to charge the difference to
// its own statistics. Codecs that keep non-finite values (topk, threshold,
// the casts) or refuse them (randomk, qsgd, sign) never count any.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "compress/codec_spec.h"
#include "compress/payload.h"

namespace cmpi::compress {

class Codec {
 public:
  explicit Codec(CodecSpec spec) : spec_(std::move(spec)) {}
  virtual ~Codec() = default;
  Codec(const Codec&) = delete;
  Codec& operator=(const Codec&) = delete;

  virtual CodecId id() const = 0;
  virtual bool lossless() const = 0;
  const std::string& name() const { return spec_.name(); }
  const CodecSpec& spec() const { return spec_; }

  // Upper bound on encode()'s output for n floats, header included.
  size_t max_encoded_bytes(size_t n) const { return kPayloadHeaderBytes + max_body_bytes(n); }

  // Encodes in[0..n) into out; capacity must be >= max_encoded_bytes(n).
  // Returns the payload size in bytes.
  size_t encode(const float* in, size_t n, uint8_t* out, size_t capacity);
  std::vector<uint8_t> encode(const float* in, size_t n);

  // The header encode() writes for n floats, before the body is known
  // (body_bytes 0, no flags): device codecs complete it on the device
  // (compress/cuda/payload_header_steps.h).
  PayloadHeader header_for(size_t n) const {
    PayloadHeader header;
    header.codec = id();
    header.params = header_params();
    header.element_count = n;
    return header;
  }

  // Decodes a payload of `size` bytes into out[0..n). Throws DecodeError if
  // the payload is not a valid encoding of n floats by this codec.
  void decode(const uint8_t* in, size_t size, float* out, size_t n) const;

  // The state of the codec's random generator (stochastic codecs: randomk,
  // qsgd, natural); empty for deterministic codecs. A checkpoint saves it and
  // restore_random_state() puts it back, so a resumed run encodes exactly as
  // the uninterrupted one. restore_random_state throws std::invalid_argument
  // for a state of the wrong length.
  virtual std::vector<uint64_t> random_state() const { return {}; }
  virtual void restore_random_state(const std::vector<uint64_t>& words);

  // Chunks encode() sent raw because they held NaN or infinity, since construction.
  uint64_t nonfinite_raw_chunks() const {
    return nonfinite_raw_chunks_.load(std::memory_order_relaxed);
  }

 protected:
  void count_nonfinite_raw_chunks(uint64_t chunks) {
    nonfinite_raw_chunks_.fetch_add(chunks, std::memory_order_relaxed);
  }

  virtual size_t max_body_bytes(size_t n) const = 0;
  // Parameters echoed into the header; decode() rejects a payload whose
  // parameters differ (e.g. a zfp rate-8 payload given to a rate-16 decoder).
  virtual std::array<uint32_t, 4> header_params() const { return {}; }
  // Writes the body into out (capacity >= max_body_bytes(n)); may set flags.
  virtual size_t encode_body(const float* in, size_t n, uint8_t* out, size_t capacity,
                             uint16_t& flags) = 0;
  // Decodes a body of exactly `size` bytes; throws DecodeError("body", ...)
  // on anything inconsistent.
  virtual void decode_body(const uint8_t* in, size_t size, float* out, size_t n,
                           uint16_t flags) const = 0;

 private:
  CodecSpec spec_;
  std::atomic<uint64_t> nonfinite_raw_chunks_{0};
};

}  // namespace cmpi::compress
