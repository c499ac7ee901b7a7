// Forward differences are independent per word and vectorize directly (the
// scalar loops carry `omp simd`, as GCC's -O2 cost model would not vectorize
// loops that need a remainder loop). The inverses are prefix sums: the SIMD
// variants compute 4 (SSSE3) or 8 (AVX2) running sums at once with the
// log-step scan (add the vector shifted by 1, then by 2 words inside each
// 128-bit lane; AVX2 then carries the low lane's total into the high lane) and
// carry the last word into the next vector. Within blocks, only the words from
// first_lagged - 1 on take part in the sum: the others are masked out of the
// scan and blended back unchanged.
#include "compress/word_differencing.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CMPI_HAVE_X86_VARIANTS 1
#endif

namespace cmpi::compress {
namespace {

// Without differencing, the words are rotated left by one: a float's sign
// bit moves below its mantissa, and its exponent becomes the top bits.
inline uint32_t rotate_sign_down(uint32_t x) {
  return (x << 1) | (x >> 31);
}

inline uint32_t rotate_sign_up(uint32_t x) {
  return (x >> 1) | (x << 31);
}

#ifdef CMPI_HAVE_X86_VARIANTS
__attribute__((target("ssse3"))) inline __m128i prefix_sum4(__m128i x) {
  x = _mm_add_epi32(x, _mm_slli_si128(x, 4));
  return _mm_add_epi32(x, _mm_slli_si128(x, 8));
}

__attribute__((target("ssse3"))) void undo_difference_at_stride_1_ssse3(const uint32_t* d,
                                                                        size_t begin, size_t end,
                                                                        uint32_t reference,
                                                                        AliasedWord* w) {
  size_t i = begin;
  const __m128i ref = _mm_set1_epi32(static_cast<int>(reference));
  __m128i carry = _mm_set1_epi32(begin > 0 ? static_cast<int>(w[begin - 1]) : 0);
  for (; i + 4 <= end; i += 4) {
    __m128i x =
        _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(d + (i - begin))), ref);
    __m128i v = _mm_add_epi32(prefix_sum4(x), carry);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(w + i), v);
    carry = _mm_shuffle_epi32(v, 0xFF);
  }
  for (; i < end; ++i) w[i] = (d[i - begin] ^ reference) + (i > 0 ? w[i - 1] : 0u);
}

__attribute__((target("ssse3"))) void undo_difference_within_blocks_ssse3(uint32_t* words,
                                                                          size_t nblocks,
                                                                          unsigned first_lagged) {
  // keep[q]: the lanes of words 4q..4q+3 that are >= first_lagged - 1.
  __m128i keep[8];
  const __m128i threshold = _mm_set1_epi32(static_cast<int>(first_lagged) - 2);
  for (int q = 0; q < 8; ++q)
    keep[q] = _mm_cmpgt_epi32(_mm_setr_epi32(4 * q, 4 * q + 1, 4 * q + 2, 4 * q + 3), threshold);
  for (size_t b = 0; b < nblocks; ++b, words += 32) {
    __m128i carry = _mm_setzero_si128();
#pragma GCC unroll 8
    for (int q = 0; q < 8; ++q) {
      auto* p = reinterpret_cast<__m128i*>(words + 4 * q);
      __m128i x = _mm_loadu_si128(p);
      __m128i v = _mm_add_epi32(prefix_sum4(_mm_and_si128(x, keep[q])), carry);
      _mm_storeu_si128(p, _mm_or_si128(_mm_and_si128(keep[q], v), _mm_andnot_si128(keep[q], x)));
      carry = _mm_shuffle_epi32(v, 0xFF);
    }
  }
}

__attribute__((target("avx2"))) inline __m256i prefix_sum8(__m256i x) {
  x = _mm256_add_epi32(x, _mm256_slli_si256(x, 4));
  x = _mm256_add_epi32(x, _mm256_slli_si256(x, 8));
  __m256i lane_totals = _mm256_shuffle_epi32(x, 0xFF);
  return _mm256_add_epi32(x, _mm256_permute2x128_si256(lane_totals, lane_totals, 0x08));
}

__attribute__((target("avx2"))) inline __m256i broadcast_last(__m256i x) {
  return _mm256_permutevar8x32_epi32(x, _mm256_set1_epi32(7));
}

__attribute__((target("avx2"))) inline __m256i load8(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

__attribute__((target("avx2"))) inline void store8(void* p, __m256i v) {
  _mm256_storeu_si256(static_cast<__m256i*>(p), v);
}

// Lanes of words 8q..8q+7 whose index is > threshold.
__attribute__((target("avx2"))) inline __m256i lanes_above(int q, int threshold) {
  return _mm256_cmpgt_epi32(
      _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(8 * q)),
      _mm256_set1_epi32(threshold));
}

__attribute__((target("avx2"))) void difference_at_stride_avx2(const AliasedWord* w, size_t begin,
                                                               size_t end, unsigned stride,
                                                               uint32_t reference, uint32_t* d) {
  const __m256i ref = _mm256_set1_epi32(static_cast<int>(reference));
  size_t i = begin;
  if (stride == 0) {
    for (; i + 8 <= end; i += 8) {
      const __m256i x = load8(w + i);
      const __m256i rotated = _mm256_or_si256(_mm256_slli_epi32(x, 1), _mm256_srli_epi32(x, 31));
      store8(d + (i - begin), _mm256_xor_si256(rotated, ref));
    }
    for (; i < end; ++i) d[i - begin] = rotate_sign_down(w[i]) ^ reference;
    return;
  }
  for (; i < end && i < stride; ++i) d[i - begin] = w[i] ^ reference;
  for (; i + 8 <= end; i += 8)
    store8(d + (i - begin),
           _mm256_xor_si256(_mm256_sub_epi32(load8(w + i), load8(w + i - stride)), ref));
  for (; i < end; ++i) d[i - begin] = (w[i] - w[i - stride]) ^ reference;
}

__attribute__((target("avx2"))) void undo_difference_at_stride_avx2(const uint32_t* d, size_t begin,
                                                                    size_t end, unsigned stride,
                                                                    uint32_t reference,
                                                                    AliasedWord* w) {
  const __m256i ref = _mm256_set1_epi32(static_cast<int>(reference));
  size_t i = begin;
  if (stride == 0) {
    for (; i + 8 <= end; i += 8) {
      const __m256i x = _mm256_xor_si256(load8(d + (i - begin)), ref);
      store8(w + i, _mm256_or_si256(_mm256_srli_epi32(x, 1), _mm256_slli_epi32(x, 31)));
    }
    for (; i < end; ++i) w[i] = rotate_sign_up(d[i - begin] ^ reference);
    return;
  }
  if (stride == 1) {
    __m256i carry = _mm256_set1_epi32(begin > 0 ? static_cast<int>(w[begin - 1]) : 0);
    for (; i + 8 <= end; i += 8) {
      __m256i v =
          _mm256_add_epi32(prefix_sum8(_mm256_xor_si256(load8(d + (i - begin)), ref)), carry);
      store8(w + i, v);
      carry = broadcast_last(v);
    }
  } else if (stride >= 8) {
    // w[i - stride .. i - stride + 8) is complete before w[i .. i + 8) is written.
    for (; i < end && i < stride; ++i) w[i] = d[i - begin] ^ reference;
    for (; i + 8 <= end; i += 8)
      store8(w + i, _mm256_add_epi32(_mm256_xor_si256(load8(d + (i - begin)), ref),
                                     load8(w + i - stride)));
  }
  for (; i < end; ++i) w[i] = (d[i - begin] ^ reference) + (i >= stride ? w[i - stride] : 0u);
}

__attribute__((target("avx2"))) void difference_within_blocks_avx2(const uint32_t* t,
                                                                   size_t nblocks,
                                                                   unsigned first_lagged,
                                                                   uint32_t* d) {
  const __m256i shift_up_one = _mm256_setr_epi32(0, 0, 1, 2, 3, 4, 5, 6);
  __m256i lagged[4];
  for (int q = 0; q < 4; ++q) lagged[q] = lanes_above(q, static_cast<int>(first_lagged) - 1);
  for (size_t b = 0; b < nblocks; ++b, t += 32, d += 32) {
    __m256i first = load8(t);
    __m256i first_prev = _mm256_blend_epi32(_mm256_permutevar8x32_epi32(first, shift_up_one),
                                            _mm256_setzero_si256(), 1);
    store8(d, _mm256_sub_epi32(first, _mm256_and_si256(first_prev, lagged[0])));
    for (int q = 1; q < 4; ++q)
      store8(d + 8 * q,
             _mm256_sub_epi32(load8(t + 8 * q), _mm256_and_si256(load8(t + 8 * q - 1), lagged[q])));
  }
}

__attribute__((target("avx2"))) void undo_difference_within_blocks_avx2(uint32_t* words,
                                                                        size_t nblocks,
                                                                        unsigned first_lagged) {
  __m256i keep[4];
  for (int q = 0; q < 4; ++q) keep[q] = lanes_above(q, static_cast<int>(first_lagged) - 2);
  for (size_t b = 0; b < nblocks; ++b, words += 32) {
    __m256i carry = _mm256_setzero_si256();
    for (int q = 0; q < 4; ++q) {
      __m256i x = load8(words + 8 * q);
      __m256i v = _mm256_add_epi32(prefix_sum8(_mm256_and_si256(x, keep[q])), carry);
      store8(words + 8 * q, _mm256_blendv_epi8(x, v, keep[q]));
      carry = broadcast_last(v);
    }
  }
}
#endif

}  // namespace

void difference_at_stride(const AliasedWord* w, size_t begin, size_t end, unsigned stride,
                          uint32_t reference, uint32_t* d, SimdLevel level) {
#ifdef CMPI_HAVE_X86_VARIANTS
  if (level == SimdLevel::kAvx2)
    return difference_at_stride_avx2(w, begin, end, stride, reference, d);
#endif
  // d and w do not overlap (w is the caller's floats, d a work buffer).
  if (stride == 0) {
#pragma omp simd
    for (size_t j = begin; j < end; ++j) d[j - begin] = rotate_sign_down(w[j]) ^ reference;
    return;
  }
  size_t i = begin;
  for (; i < end && i < stride; ++i) d[i - begin] = w[i] ^ reference;
  const size_t first = i;
#pragma omp simd
  for (size_t j = first; j < end; ++j) d[j - begin] = (w[j] - w[j - stride]) ^ reference;
}

void undo_difference_at_stride(const uint32_t* d, size_t begin, size_t end, unsigned stride,
                               uint32_t reference, AliasedWord* w, SimdLevel level) {
#ifdef CMPI_HAVE_X86_VARIANTS
  if (level == SimdLevel::kAvx2)
    return undo_difference_at_stride_avx2(d, begin, end, stride, reference, w);
  if (level == SimdLevel::kSsse3 && stride == 1)
    return undo_difference_at_stride_1_ssse3(d, begin, end, reference, w);
#endif
  size_t i = begin;
  if (stride == 0) {
#pragma omp simd
    for (size_t j = begin; j < end; ++j) w[j] = rotate_sign_up(d[j - begin] ^ reference);
    return;
  }
  if (stride == 1) {
    // The running sum stays in a register instead of going through memory.
    uint32_t sum = begin > 0 ? w[begin - 1] : 0u;
    for (; i < end; ++i) w[i] = sum += d[i - begin] ^ reference;
    return;
  }
  for (; i < end && i < stride; ++i) w[i] = d[i - begin] ^ reference;
  for (; i < end; ++i) w[i] = (d[i - begin] ^ reference) + w[i - stride];
}

void difference_within_blocks(const uint32_t* t, size_t nblocks, unsigned first_lagged, uint32_t* d,
                              SimdLevel level) {
#ifdef CMPI_HAVE_X86_VARIANTS
  if (level == SimdLevel::kAvx2) return difference_within_blocks_avx2(t, nblocks, first_lagged, d);
#endif
  // lagged[j]: all ones where word j is differenced, so the loop has no branch.
  uint32_t lagged[32];
  for (unsigned j = 0; j < 32; ++j) lagged[j] = j >= first_lagged ? ~0u : 0u;
  for (size_t b = 0; b < nblocks; ++b, t += 32, d += 32) {
    d[0] = t[0];
#pragma omp simd
    for (unsigned j = 1; j < 32; ++j) d[j] = t[j] - (t[j - 1] & lagged[j]);
  }
}

void undo_difference_within_blocks(uint32_t* words, size_t nblocks, unsigned first_lagged,
                                   SimdLevel level) {
#ifdef CMPI_HAVE_X86_VARIANTS
  if (level == SimdLevel::kAvx2)
    return undo_difference_within_blocks_avx2(words, nblocks, first_lagged);
  if (level == SimdLevel::kSsse3)
    return undo_difference_within_blocks_ssse3(words, nblocks, first_lagged);
#endif
  const unsigned first = first_lagged - 1;
  for (size_t b = 0; b < nblocks; ++b, words += 32) {
    uint32_t sum = 0;
    for (unsigned j = first; j < 32; ++j) words[j] = sum += words[j];
  }
}

}  // namespace cmpi::compress
