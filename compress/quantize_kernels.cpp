// Scalar references first, then their SSE4.1 twins. The SSE versions process
// four values per step with the same per-value operations (truncating float
// to int32 conversion, compare-and-subtract for the random round-up, integer
// selects), handle leftovers with the scalar code, and keep reductions in the
// scalar code's lane order, so both produce the same bits.
#include "compress/quantize_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(CMPI_HAVE_SSE41_KERNELS)
#include <smmintrin.h>
#endif

namespace cmpi::compress::kernels {
namespace {

constexpr uint32_t kNaturalNanCode = 0x100;
constexpr uint32_t kQuietNan = 0x7fc00000u;
constexpr uint32_t kExponentMask = 0x7f800000u;
constexpr uint32_t kMagnitudeMask = 0x7fffffffu;
constexpr size_t kLanes = 8;

uint32_t bits_of(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}

float float_of(uint32_t b) {
  float x;
  std::memcpy(&x, &b, 4);
  return x;
}

uint32_t qsgd_code(float x, float inv, uint32_t s, uint32_t u24) {
  const float r = std::fabs(x) * inv;
  int32_t level = int32_t(r);
  const float fraction = r - float(level);
  level += float(int32_t(u24)) * 0x1p-24f < fraction;
  level = std::min(level, int32_t(s));
  return (bits_of(x) >> 31) ? s - uint32_t(level) : s + uint32_t(level);
}

uint32_t natural_code(float x, uint32_t u23) {
  const uint32_t bits = bits_of(x);
  const uint32_t sign = bits >> 31;
  const uint32_t exponent = (bits >> 23) & 0xff;
  const uint32_t mantissa = bits & 0x7fffff;
  // Round up with probability mantissa / 2^23; never past 2^127 (254), and
  // infinities/NaN (255) keep their exponent.
  const uint32_t up = uint32_t(u23 < mantissa) & uint32_t(exponent < 254);
  const uint32_t e8 = exponent + up;
  const uint32_t code = e8 == 0 ? 0 : (sign << 8) | e8;
  return (exponent == 255 && mantissa != 0) ? kNaturalNanCode : code;
}

float natural_value(uint32_t c) {
  const uint32_t bits = ((c & 0x100) << 23) | ((c & 0xff) << 23);
  return float_of(c == kNaturalNanCode ? kQuietNan : bits);
}

float sign_value(const uint8_t* bits, size_t i, uint32_t scale_bits) {
  return float_of(scale_bits | (uint32_t((bits[i / 8] >> (i % 8)) & 1) << 31));
}

template <bool kSquare>
float lane_sum_scalar(const float* x, size_t len) {
  float acc[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= len; i += kLanes)
    for (size_t l = 0; l < kLanes; ++l)
      acc[l] += kSquare ? x[i + l] * x[i + l] : std::fabs(x[i + l]);
  float total = 0;
  for (size_t l = 0; l < kLanes; ++l) total += acc[l];
  for (; i < len; ++i) total += kSquare ? x[i] * x[i] : std::fabs(x[i]);
  return total;
}

}  // namespace

namespace scalar {

void qsgd_quantize(const float* x, size_t len, float inv, uint32_t s, const uint32_t* u24,
                   uint32_t* codes) {
  for (size_t j = 0; j < len; ++j) codes[j] = qsgd_code(x[j], inv, s, u24[j]);
}

void qsgd_dequantize(const uint32_t* codes, size_t len, uint32_t s, float step, float* out) {
  const float offset = float(int32_t(s));
  for (size_t j = 0; j < len; ++j) out[j] = (float(int32_t(codes[j])) - offset) * step;
}

uint32_t max_code(const uint32_t* codes, size_t len) {
  uint32_t best = 0;
  for (size_t j = 0; j < len; ++j) best = std::max(best, codes[j]);
  return best;
}

void natural_encode(const float* x, size_t len, const uint32_t* u23, uint32_t* codes) {
  for (size_t j = 0; j < len; ++j) codes[j] = natural_code(x[j], u23[j]);
}

void natural_decode(const uint32_t* codes, size_t len, float* out) {
  for (size_t j = 0; j < len; ++j) out[j] = natural_value(codes[j]);
}

uint64_t sign_bits(const float* x, size_t len) {
  uint64_t word = 0;
  for (size_t j = 0; j < len; ++j) word |= uint64_t(bits_of(x[j]) >> 31) << j;
  return word;
}

void sign_decode(const uint8_t* bits, size_t first, size_t len, float scale, float* out) {
  const uint32_t scale_bits = bits_of(scale);
  for (size_t j = 0; j < len; ++j) out[j] = sign_value(bits, first + j, scale_bits);
}

float sum_squares(const float* x, size_t len) {
  return lane_sum_scalar<true>(x, len);
}
float sum_abs(const float* x, size_t len) {
  return lane_sum_scalar<false>(x, len);
}

uint32_t max_magnitude_key(const float* x, size_t len) {
  uint32_t best = 0;
  for (size_t i = 0; i < len; ++i) best = std::max(best, bits_of(x[i]) & kMagnitudeMask);
  return best;
}

bool any_nonfinite(const float* x, size_t len) {
  uint32_t hit = 0;
  for (size_t i = 0; i < len; ++i)
    hit |= uint32_t((bits_of(x[i]) & kExponentMask) == kExponentMask);
  return hit != 0;
}

}  // namespace scalar

#if defined(CMPI_HAVE_SSE41_KERNELS)
#define CMPI_SSE41 __attribute__((target("sse4.1")))

bool sse41_supported() {
  return __builtin_cpu_supports("sse4.1");
}

namespace sse41 {
namespace {

template <bool kSquare>
CMPI_SSE41 float lane_sum(const float* x, size_t len) {
  const __m128 magnitude = _mm_castsi128_ps(_mm_set1_epi32(int(kMagnitudeMask)));
  __m128 low = _mm_setzero_ps(), high = _mm_setzero_ps();
  size_t i = 0;
  for (; i + kLanes <= len; i += kLanes) {
    const __m128 a = _mm_loadu_ps(x + i), b = _mm_loadu_ps(x + i + 4);
    low = _mm_add_ps(low, kSquare ? _mm_mul_ps(a, a) : _mm_and_ps(a, magnitude));
    high = _mm_add_ps(high, kSquare ? _mm_mul_ps(b, b) : _mm_and_ps(b, magnitude));
  }
  float acc[kLanes];
  _mm_storeu_ps(acc, low);
  _mm_storeu_ps(acc + 4, high);
  float total = 0;
  for (size_t l = 0; l < kLanes; ++l) total += acc[l];
  for (; i < len; ++i) total += kSquare ? x[i] * x[i] : std::fabs(x[i]);
  return total;
}

}  // namespace

CMPI_SSE41 void qsgd_quantize(const float* x, size_t len, float inv, uint32_t s,
                              const uint32_t* u24, uint32_t* codes) {
  const __m128 magnitude = _mm_castsi128_ps(_mm_set1_epi32(int(kMagnitudeMask)));
  const __m128 vinv = _mm_set1_ps(inv);
  const __m128 unit = _mm_set1_ps(0x1p-24f);
  const __m128i vs = _mm_set1_epi32(int(s));
  size_t j = 0;
  for (; j + 4 <= len; j += 4) {
    const __m128 v = _mm_loadu_ps(x + j);
    const __m128 r = _mm_mul_ps(_mm_and_ps(v, magnitude), vinv);
    __m128i level = _mm_cvttps_epi32(r);
    const __m128 fraction = _mm_sub_ps(r, _mm_cvtepi32_ps(level));
    const __m128 u = _mm_mul_ps(
        _mm_cvtepi32_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(u24 + j))), unit);
    level = _mm_sub_epi32(level, _mm_castps_si128(_mm_cmplt_ps(u, fraction)));  // +1 where true
    level = _mm_min_epi32(level, vs);
    const __m128i negative = _mm_srai_epi32(_mm_castps_si128(v), 31);  // -1 for a set sign bit
    const __m128i signed_level = _mm_sub_epi32(_mm_xor_si128(level, negative), negative);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(codes + j), _mm_add_epi32(vs, signed_level));
  }
  scalar::qsgd_quantize(x + j, len - j, inv, s, u24 + j, codes + j);
}

CMPI_SSE41 void qsgd_dequantize(const uint32_t* codes, size_t len, uint32_t s, float step,
                                float* out) {
  const __m128 offset = _mm_set1_ps(float(int32_t(s)));
  const __m128 vstep = _mm_set1_ps(step);
  size_t j = 0;
  for (; j + 4 <= len; j += 4) {
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + j));
    _mm_storeu_ps(out + j, _mm_mul_ps(_mm_sub_ps(_mm_cvtepi32_ps(c), offset), vstep));
  }
  scalar::qsgd_dequantize(codes + j, len - j, s, step, out + j);
}

CMPI_SSE41 uint32_t max_code(const uint32_t* codes, size_t len) {
  __m128i best = _mm_setzero_si128();
  size_t j = 0;
  for (; j + 4 <= len; j += 4)
    best = _mm_max_epu32(best, _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + j)));
  uint32_t lanes[4];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(lanes), best);
  uint32_t result = std::max(std::max(lanes[0], lanes[1]), std::max(lanes[2], lanes[3]));
  return std::max(result, scalar::max_code(codes + j, len - j));
}

CMPI_SSE41 void natural_encode(const float* x, size_t len, const uint32_t* u23, uint32_t* codes) {
  const __m128i low8 = _mm_set1_epi32(0xff);
  const __m128i mantissa_mask = _mm_set1_epi32(0x7fffff);
  const __m128i top_finite = _mm_set1_epi32(254);
  const __m128i nan_code = _mm_set1_epi32(int(kNaturalNanCode));
  const __m128i zero = _mm_setzero_si128();
  size_t j = 0;
  for (; j + 4 <= len; j += 4) {
    const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + j));
    const __m128i exponent = _mm_and_si128(_mm_srli_epi32(bits, 23), low8);
    const __m128i mantissa = _mm_and_si128(bits, mantissa_mask);
    const __m128i u = _mm_loadu_si128(reinterpret_cast<const __m128i*>(u23 + j));
    // All operands are below 2^23, so the signed compares are exact.
    const __m128i up =
        _mm_and_si128(_mm_cmplt_epi32(u, mantissa), _mm_cmplt_epi32(exponent, top_finite));
    const __m128i e8 = _mm_sub_epi32(exponent, up);
    __m128i code = _mm_or_si128(_mm_slli_epi32(_mm_srli_epi32(bits, 31), 8), e8);
    code = _mm_andnot_si128(_mm_cmpeq_epi32(e8, zero), code);
    const __m128i is_nan =
        _mm_andnot_si128(_mm_cmpeq_epi32(mantissa, zero), _mm_cmpeq_epi32(exponent, low8));
    code = _mm_blendv_epi8(code, nan_code, is_nan);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(codes + j), code);
  }
  scalar::natural_encode(x + j, len - j, u23 + j, codes + j);
}

CMPI_SSE41 void natural_decode(const uint32_t* codes, size_t len, float* out) {
  const __m128i sign_bit = _mm_set1_epi32(0x100);
  const __m128i low8 = _mm_set1_epi32(0xff);
  const __m128i nan_code = _mm_set1_epi32(int(kNaturalNanCode));
  const __m128i quiet_nan = _mm_set1_epi32(int(kQuietNan));
  size_t j = 0;
  for (; j + 4 <= len; j += 4) {
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + j));
    const __m128i bits = _mm_or_si128(_mm_slli_epi32(_mm_and_si128(c, sign_bit), 23),
                                      _mm_slli_epi32(_mm_and_si128(c, low8), 23));
    const __m128i value = _mm_blendv_epi8(bits, quiet_nan, _mm_cmpeq_epi32(c, nan_code));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j), value);
  }
  scalar::natural_decode(codes + j, len - j, out + j);
}

CMPI_SSE41 uint64_t sign_bits(const float* x, size_t len) {
  uint64_t word = 0;
  size_t j = 0;
  for (; j + 4 <= len; j += 4) word |= uint64_t(_mm_movemask_ps(_mm_loadu_ps(x + j))) << j;
  return j < len ? word | (scalar::sign_bits(x + j, len - j) << j) : word;
}

CMPI_SSE41 void sign_decode(const uint8_t* bits, size_t first, size_t len, float scale,
                            float* out) {
  const uint32_t scale_bits = bits_of(scale);
  size_t j = 0;
  for (; j < len && (first + j) % 8 != 0; ++j) out[j] = sign_value(bits, first + j, scale_bits);
  const __m128i low_lanes = _mm_setr_epi32(1, 2, 4, 8);
  const __m128i high_lanes = _mm_setr_epi32(16, 32, 64, 128);
  const __m128i sign = _mm_set1_epi32(int(0x80000000u));
  const __m128i vscale = _mm_set1_epi32(int(scale_bits));
  for (; j + 8 <= len; j += 8) {
    const __m128i byte = _mm_set1_epi32(bits[(first + j) / 8]);
    const __m128i low = _mm_cmpeq_epi32(_mm_and_si128(byte, low_lanes), low_lanes);
    const __m128i high = _mm_cmpeq_epi32(_mm_and_si128(byte, high_lanes), high_lanes);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j),
                     _mm_or_si128(vscale, _mm_and_si128(low, sign)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j + 4),
                     _mm_or_si128(vscale, _mm_and_si128(high, sign)));
  }
  for (; j < len; ++j) out[j] = sign_value(bits, first + j, scale_bits);
}

CMPI_SSE41 float sum_squares(const float* x, size_t len) {
  return lane_sum<true>(x, len);
}
CMPI_SSE41 float sum_abs(const float* x, size_t len) {
  return lane_sum<false>(x, len);
}

CMPI_SSE41 uint32_t max_magnitude_key(const float* x, size_t len) {
  const __m128i magnitude = _mm_set1_epi32(int(kMagnitudeMask));
  __m128i best = _mm_setzero_si128();
  size_t i = 0;
  for (; i + 4 <= len; i += 4)
    best = _mm_max_epu32(
        best, _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)), magnitude));
  uint32_t lanes[4];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(lanes), best);
  const uint32_t result = std::max(std::max(lanes[0], lanes[1]), std::max(lanes[2], lanes[3]));
  return std::max(result, scalar::max_magnitude_key(x + i, len - i));
}

CMPI_SSE41 bool any_nonfinite(const float* x, size_t len) {
  const __m128i exponent = _mm_set1_epi32(int(kExponentMask));
  __m128i hit = _mm_setzero_si128();
  size_t i = 0;
  for (; i + 4 <= len; i += 4) {
    const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
    hit = _mm_or_si128(hit, _mm_cmpeq_epi32(_mm_and_si128(bits, exponent), exponent));
  }
  return _mm_movemask_epi8(hit) != 0 || scalar::any_nonfinite(x + i, len - i);
}

}  // namespace sse41

#define CMPI_KERNEL_CALL(function, ...) \
  (sse41_supported() ? sse41::function(__VA_ARGS__) : scalar::function(__VA_ARGS__))
#else
#define CMPI_KERNEL_CALL(function, ...) scalar::function(__VA_ARGS__)
#endif

void qsgd_quantize(const float* x, size_t len, float inv, uint32_t s, const uint32_t* u24,
                   uint32_t* codes) {
  CMPI_KERNEL_CALL(qsgd_quantize, x, len, inv, s, u24, codes);
}
void qsgd_dequantize(const uint32_t* codes, size_t len, uint32_t s, float step, float* out) {
  CMPI_KERNEL_CALL(qsgd_dequantize, codes, len, s, step, out);
}
uint32_t max_code(const uint32_t* codes, size_t len) {
  return CMPI_KERNEL_CALL(max_code, codes, len);
}
void natural_encode(const float* x, size_t len, const uint32_t* u23, uint32_t* codes) {
  CMPI_KERNEL_CALL(natural_encode, x, len, u23, codes);
}
void natural_decode(const uint32_t* codes, size_t len, float* out) {
  CMPI_KERNEL_CALL(natural_decode, codes, len, out);
}
uint64_t sign_bits(const float* x, size_t len) {
  return CMPI_KERNEL_CALL(sign_bits, x, len);
}
void sign_decode(const uint8_t* bits, size_t first, size_t len, float scale, float* out) {
  CMPI_KERNEL_CALL(sign_decode, bits, first, len, scale, out);
}
float sum_squares(const float* x, size_t len) {
  return CMPI_KERNEL_CALL(sum_squares, x, len);
}
float sum_abs(const float* x, size_t len) {
  return CMPI_KERNEL_CALL(sum_abs, x, len);
}
uint32_t max_magnitude_key(const float* x, size_t len) {
  return CMPI_KERNEL_CALL(max_magnitude_key, x, len);
}
bool any_nonfinite(const float* x, size_t len) {
  return CMPI_KERNEL_CALL(any_nonfinite, x, len);
}

#undef CMPI_KERNEL_CALL

}  // namespace cmpi::compress::kernels
