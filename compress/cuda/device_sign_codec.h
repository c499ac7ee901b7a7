// The device sign codec with error feedback (sign_feedback_steps.h): the
// payload SignCodec writes, and through encode_with_feedback the payload and
// residual ErrorFeedback(SignCodec) leaves. Plain encode runs the same steps
// on a scratch copy of the input whose residual is thrown away.
#pragma once

#include <cstdint>
#include <memory>

#include "compress/bucket_stats.h"
#include "compress/codec_registry.h"
#include "compress/cuda/device_codec.h"
#include "compress/cuda/sign_feedback_steps.h"

namespace cmpi::compress::cuda {

namespace sign_steps {
struct FormWork {
  const float* x;
  float* r;
  bool first;
  CMPI_HD void operator()(uint64_t i) const { sign_form_work(x, r, first, i); }
};
struct BucketScale {
  const float* w;
  SignShape shape;
  uint8_t* body;
  uint32_t* error;
  CMPI_HD void operator()(uint64_t b) const { sign_bucket_scale(w, shape, body, error, b); }
};
struct Finish {
  HeaderTemplate header;
  SignShape shape;
  const uint32_t* error;
  uint8_t* payload;
  uint64_t* size_out;
  CMPI_HD void operator()() const { sign_finish(header, shape, error, payload, size_out); }
};
struct SignsResiduals {
  SignShape shape;
  uint8_t* body;
  float* r;
  CMPI_HD void operator()(uint64_t j) const { sign_signs_residuals(shape, body, r, j); }
};
// Decode: header, size, scales (finite, >= 0) and zero padding bits.
struct Check {
  HeaderTemplate header;
  SignShape shape;
  const uint8_t* payload;
  uint64_t size;
  uint32_t* status;
  CMPI_HD void operator()() const { *status = sign_check_payload(header, shape, payload, size); }
};
struct CheckBucket {
  const uint8_t* body;
  uint32_t* status;
  CMPI_HD void operator()(uint64_t b) const { sign_check_bucket(body, status, b); }
};
struct Decode {
  SignShape shape;
  const uint8_t* body;
  const uint32_t* status;
  float* out;
  CMPI_HD void operator()(uint64_t i) const {
    if (*status != kDecodeOk) return;
    const uint32_t sign = (body[4 * shape.buckets() + i / 8] >> (i % 8)) & 1u;
    out[i] = hd::float_of(hd::load_le32(body + 4 * (i / shape.span())) | (sign << 31));
  }
};
}  // namespace sign_steps

template <class Executor>
class DeviceSignCodec final : public DeviceCodec {
 public:
  DeviceSignCodec(Device& device, Executor executor, const CodecSpec& spec)
      : device_(device),
        executor_(executor),
        scratch_(device),
        twin_(make_codec(spec)),
        bucket_(bucket_param(spec)) {}

  const Codec& cpu_twin() const override { return *twin_; }
  uint64_t max_payload_bytes(uint64_t n) const override {
    return kHeaderBytes + shape(n).body_bytes();
  }
  bool has_feedback() const override { return true; }

  void encode(const float* in, uint64_t n, uint8_t* out, uint64_t* size_out,
              StreamId stream) override {
    auto* work = reinterpret_cast<float*>(scratch_.get(stream, 8 + 4 * n) + 8);
    encode_with_feedback(in, n, work, true, out, size_out, stream);
  }

  void encode_with_feedback(const float* in, uint64_t n, float* residual, bool first, uint8_t* out,
                            uint64_t* size_out, StreamId stream) override {
    const SignShape s = shape(n);
    // The error word lives in front of the plain encode's work buffer.
    auto* error = reinterpret_cast<uint32_t*>(scratch_.get(stream, 8 + 4 * n));
    uint8_t* body = out + kHeaderBytes;
    device_.fill(error, 0, 4, stream);
    executor_.for_each(stream, n, sign_steps::FormWork{in, residual, first});
    executor_.for_each(stream, s.buckets(), sign_steps::BucketScale{residual, s, body, error});
    executor_.single(stream,
                     sign_steps::Finish{header_template(*twin_, n), s, error, out, size_out});
    executor_.for_each(stream, s.sign_bytes(), sign_steps::SignsResiduals{s, body, residual});
  }

  void decode(const uint8_t* in, uint64_t size, float* out, uint64_t n, uint32_t* status_out,
              StreamId stream) override {
    const SignShape s = shape(n);
    executor_.single(stream,
                     sign_steps::Check{header_template(*twin_, n), s, in, size, status_out});
    executor_.for_each(stream, s.buckets(), sign_steps::CheckBucket{in + kHeaderBytes, status_out});
    executor_.for_each(stream, n, sign_steps::Decode{s, in + kHeaderBytes, status_out, out});
  }

 private:
  SignShape shape(uint64_t n) const {
    SignShape s;
    s.n = n, s.bucket = bucket_;
    return s;
  }

  Device& device_;
  Executor executor_;
  StreamScratch scratch_;
  std::unique_ptr<Codec> twin_;
  uint64_t bucket_;
};

}  // namespace cmpi::compress::cuda
