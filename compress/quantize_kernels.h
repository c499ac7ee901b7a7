// The per-value hot loops of the quantizers (qsgd, natural, sign) and of the
// bucket statistics and finite checks they rely on. Each kernel exists as a
// portable scalar reference and, on x86-64, as a 4-wide SSE4.1 version
// (compiled with a per-function target attribute, used when the CPU has
// SSE4.1) that produces bit-identical results: the same float operations in
// the same order per value, and sums kept in the same eight lanes. The
// unprefixed functions pick the fastest version; tests compare the two.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cmpi::compress::kernels {

// qsgd: r = |x| * inv, level = floor(r) + [u24 * 2^-24 < frac(r)] capped at
// s, code = s + level for x >= +0, s - level for a set sign bit.
void qsgd_quantize(const float* x, size_t len, float inv, uint32_t s, const uint32_t* u24,
                   uint32_t* codes);
// out = (code - s) * step.
void qsgd_dequantize(const uint32_t* codes, size_t len, uint32_t s, float step, float* out);
// Largest code (to validate codes <= 2s in one comparison).
uint32_t max_code(const uint32_t* codes, size_t len);

// natural: 9-bit codes (natural_codec.h) from floats and 23-bit uniforms.
void natural_encode(const float* x, size_t len, const uint32_t* u23, uint32_t* codes);
void natural_decode(const uint32_t* codes, size_t len, float* out);

// sign: the sign bits of x[0..len), len <= 64, as bit j of the result.
uint64_t sign_bits(const float* x, size_t len);
// out[j] = -scale if bit (first + j) of the stream is set, else +scale.
void sign_decode(const uint8_t* bits, size_t first, size_t len, float scale, float* out);

// Bucket statistics over short blocks, eight float lanes, lane l summing
// x[l], x[l+8], ..., then lanes added in order and the tail after them.
float sum_squares(const float* x, size_t len);
float sum_abs(const float* x, size_t len);
// max over (float bits & 0x7fffffff): max |x| for finite x; >= 0x7f800000
// iff a NaN or infinity is present.
uint32_t max_magnitude_key(const float* x, size_t len);
// True if x[0..len) holds a NaN or infinity.
bool any_nonfinite(const float* x, size_t len);

namespace scalar {
void qsgd_quantize(const float* x, size_t len, float inv, uint32_t s, const uint32_t* u24,
                   uint32_t* codes);
void qsgd_dequantize(const uint32_t* codes, size_t len, uint32_t s, float step, float* out);
uint32_t max_code(const uint32_t* codes, size_t len);
void natural_encode(const float* x, size_t len, const uint32_t* u23, uint32_t* codes);
void natural_decode(const uint32_t* codes, size_t len, float* out);
uint64_t sign_bits(const float* x, size_t len);
void sign_decode(const uint8_t* bits, size_t first, size_t len, float scale, float* out);
float sum_squares(const float* x, size_t len);
float sum_abs(const float* x, size_t len);
uint32_t max_magnitude_key(const float* x, size_t len);
bool any_nonfinite(const float* x, size_t len);
}  // namespace scalar

#if defined(__x86_64__) && defined(__GNUC__)
#define CMPI_HAVE_SSE41_KERNELS 1
// Whether this CPU runs the sse41 kernels.
bool sse41_supported();
namespace sse41 {
void qsgd_quantize(const float* x, size_t len, float inv, uint32_t s, const uint32_t* u24,
                   uint32_t* codes);
void qsgd_dequantize(const uint32_t* codes, size_t len, uint32_t s, float step, float* out);
uint32_t max_code(const uint32_t* codes, size_t len);
void natural_encode(const float* x, size_t len, const uint32_t* u23, uint32_t* codes);
void natural_decode(const uint32_t* codes, size_t len, float* out);
uint64_t sign_bits(const float* x, size_t len);
void sign_decode(const uint8_t* bits, size_t first, size_t len, float scale, float* out);
float sum_squares(const float* x, size_t len);
float sum_abs(const float* x, size_t len);
uint32_t max_magnitude_key(const float* x, size_t len);
bool any_nonfinite(const float* x, size_t len);
}  // namespace sse41
#endif

}  // namespace cmpi::compress::kernels
