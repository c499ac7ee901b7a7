// The sign quantizer with error feedback on the device, as CMPI_HD steps:
// the bytes ErrorFeedback(SignCodec) writes and the residual it keeps, bit
// for bit (compress/sign_codec.h, compress/error_feedback.h).
//
// With w = x + r (w = x the first time, as ErrorFeedback copies rather than
// adds 0, which would turn -0.0 into +0.0), the residual buffer r holds w
// between the steps:
//   1. form_work       thread per value: r = first ? x : x + r;
//   2. bucket_scale    thread per bucket: mean |w| summed as bucket_stats.cpp
//                      does (blocks of 256 in float over 8 lanes, redone in
//                      double when not finite, added in double), stored as
//                      the bucket's float scale; a NaN/Inf or an overflowing
//                      scale sets the error word;
//   3. finish          one thread: header and size (size 0 on error: the
//                      CPU codec throws there, the device leaves no payload);
//   4. signs_residuals thread per 8 values: their sign byte, and the new
//                      residual w - decoded (0 where not finite).
// Decode: check_payload (one thread: header, size, padding bits), then
// check_bucket (thread per bucket: a negative or non-finite scale marks the
// payload bad; every such thread writes the same code), then decode per value.
#pragma once

#include <cstdint>

#include "compress/cuda/payload_header_steps.h"
#include "compress/host_device.h"

namespace cmpi::compress::cuda {

struct SignShape {
  uint64_t n = 0;
  uint64_t bucket = 512;  // 0: one bucket
  CMPI_HD uint64_t span() const { return bucket == 0 ? n : bucket; }
  CMPI_HD uint64_t buckets() const {
    return n == 0 ? 0 : bucket == 0 ? 1 : (n + bucket - 1) / bucket;
  }
  CMPI_HD uint64_t sign_bytes() const { return (n + 7) / 8; }
  CMPI_HD uint64_t body_bytes() const { return 4 * buckets() + sign_bytes(); }
};

CMPI_HD inline bool finite_bits(uint32_t bits) {
  return (bits & 0x7f800000u) != 0x7f800000u;
}

// kernels::sum_abs's order: lane l sums x[l], x[l + 8], ...; lanes added in
// order, then the tail.
CMPI_HD inline float lane_sum_abs(const float* x, uint64_t len) {
  float lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  uint64_t i = 0;
  for (; i + 8 <= len; i += 8)
    for (int l = 0; l < 8; ++l) lanes[l] += hd::float_of(hd::bits_of(x[i + l]) & 0x7fffffffu);
  float total = 0;
  for (int l = 0; l < 8; ++l) total += lanes[l];
  for (; i < len; ++i) total += hd::float_of(hd::bits_of(x[i]) & 0x7fffffffu);
  return total;
}

// bucket_stats.cpp's block_sum for |x|.
CMPI_HD inline double block_sum_abs(const float* x, uint64_t len) {
  const float total = lane_sum_abs(x, len);
  if (finite_bits(hd::bits_of(total))) return total;
  double exact[4] = {0, 0, 0, 0};
  uint64_t j = 0;
  for (; j + 4 <= len; j += 4)
    for (int l = 0; l < 4; ++l) {
      const double v = x[j + l];
      exact[l] += v < 0 ? -v : v;
    }
  for (; j < len; ++j) {
    const double v = x[j];
    exact[0] += v < 0 ? -v : v;
  }
  return (exact[0] + exact[1]) + (exact[2] + exact[3]);
}

enum SignEncodeError : uint32_t { kSignOk = 0, kSignNonfinite = 1, kSignScaleOverflow = 2 };

CMPI_HD inline void sign_form_work(const float* x, float* r, bool first, uint64_t i) {
  r[i] = first ? x[i] : x[i] + r[i];
}

// Bucket b's mean |w| into the body; sets *error on a NaN/Inf or overflow.
CMPI_HD inline void sign_bucket_scale(const float* w, const SignShape& shape, uint8_t* body,
                                      uint32_t* error, uint64_t b) {
  const uint64_t begin = b * shape.span();
  const uint64_t len = hd::min_of(shape.span(), shape.n - begin);
  double sum = 0;
  for (uint64_t start = 0; start < len; start += 256)
    sum += block_sum_abs(w + begin + start, hd::min_of<uint64_t>(256, len - start));
  const bool finite = sum - sum == 0;  // false for NaN and +-Inf
  float scale = 0;
  if (!finite) {
    *error = kSignNonfinite;
  } else {
    const double value = sum / double(len);
    if (value > 3.4028234663852886e38)
      *error = kSignScaleOverflow;
    else
      scale = float(value);
  }
  hd::store_le32(body + 4 * b, hd::bits_of(scale));
}

CMPI_HD inline void sign_finish(const HeaderTemplate& header, const SignShape& shape,
                                const uint32_t* error, uint8_t* payload, uint64_t* size_out) {
  if (*error != kSignOk) {
    *size_out = 0;
    return;
  }
  finish_payload_header(header, shape.body_bytes(), payload);
  *size_out = kHeaderBytes + shape.body_bytes();
}

// Values [8j, 8j + 8): the sign byte, and r = w - decoded.
CMPI_HD inline void sign_signs_residuals(const SignShape& shape, uint8_t* body, float* r,
                                         uint64_t j) {
  uint32_t byte = 0;
  const uint64_t end = hd::min_of(shape.n, 8 * j + 8);
  for (uint64_t i = 8 * j; i < end; ++i) {
    const uint32_t bits = hd::bits_of(r[i]);
    const uint32_t sign = bits >> 31;
    byte |= sign << (i - 8 * j);
    const uint32_t scale = hd::load_le32(body + 4 * (i / shape.span()));
    const float decoded = hd::float_of(scale | (sign << 31));
    const float left = r[i] - decoded;
    r[i] = finite_bits(hd::bits_of(left)) ? left : 0.f;
  }
  body[4 * shape.buckets() + j] = uint8_t(byte);
}

// Decode step 1, one thread: the header this decoder writes for the size,
// and no sign bits set past n in the last byte.
CMPI_HD inline uint32_t sign_check_payload(const HeaderTemplate& header, const SignShape& shape,
                                           const uint8_t* payload, uint64_t size) {
  if (!payload_header_matches(header, payload, size) || size != kHeaderBytes + shape.body_bytes())
    return kDecodeBadHeader;
  const uint8_t* body = payload + kHeaderBytes;
  const uint32_t used = shape.n % 8;
  if (used && (body[4 * shape.buckets() + shape.sign_bytes() - 1] >> used)) return kDecodeBadChunk;
  return kDecodeOk;
}

// Decode step 2, thread per bucket: refuses a negative or non-finite scale.
// Runs after step 1 on the same stream; racing threads all write one code.
CMPI_HD inline void sign_check_bucket(const uint8_t* body, uint32_t* status, uint64_t b) {
  if (*status != kDecodeOk) return;
  const uint32_t scale = hd::load_le32(body + 4 * b);
  if ((scale >> 31) || !finite_bits(scale)) *status = kDecodeBadChunk;
}

}  // namespace cmpi::compress::cuda
