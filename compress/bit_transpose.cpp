// Two implementations of the 32x32 bit transpose, bit-identical:
//
// scalar: the recursive block swap. A 32x32 bit matrix is transposed by
//   swapping its off-diagonal 16x16 blocks, then the off-diagonal 8x8 blocks
//   inside each 16x16 block, and so on down to 1x1: five rounds, each a
//   masked shift-and-xor over 16 pairs of words (rows k and k+j, j = 16..1).
//
// avx2 (and ssse3, the same with 16-byte vectors and two movemasks per
// output word): bit-plane extraction with movemask. The 128 bytes of a block are
//   first regrouped (byte shuffles) into four 32-byte vectors, vector p
//   holding byte p of words 0..31 in order. _mm256_movemask_epi8 then collects
//   the top bit of each of the 32 bytes, i.e. bit 8p+7 of every word: that is
//   output word 8p+7. Doubling every byte moves the next bit to the top; eight
//   rounds per vector yield all 32 output words.
#include "compress/bit_transpose.h"

#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CMPI_HAVE_X86_VARIANTS 1
#endif

namespace cmpi::compress {
namespace {

void transpose_block_scalar(const uint32_t* in, uint32_t* out) {
  uint32_t a[32];
  std::memcpy(a, in, sizeof(a));
  // mask: the columns c with (c & j) == 0, i.e. the lower half of each
  // 2j-wide column group, which exchanges with the upper half of the row j below.
  uint32_t mask = 0x0000FFFFu;
  for (unsigned j = 16; j != 0; j >>= 1, mask ^= mask << j) {
    for (unsigned k = 0; k < 32; k = (k + j + 1) & ~j) {
      uint32_t t = ((a[k] >> j) ^ a[k + j]) & mask;
      a[k + j] ^= t;
      a[k] ^= t << j;
    }
  }
  std::memcpy(out, a, sizeof(a));
}

#ifdef CMPI_HAVE_X86_VARIANTS
__attribute__((target("ssse3"))) void transpose_blocks_ssse3(const uint32_t* in, uint32_t* out,
                                                             size_t nblocks) {
  // byte 4q+p -> 4p+q: dword p of each vector holds byte p of its 4 words.
  const __m128i bytes_by_plane =
      _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  for (size_t b = 0; b < nblocks; ++b, in += 32, out += 32) {
    // plane[p][h]: byte p of words 16h..16h+15.
    __m128i plane[4][2];
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      __m128i a[4];
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i)
        a[i] = _mm_shuffle_epi8(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 16 * h + 4 * i)), bytes_by_plane);
      __m128i p01_lo = _mm_unpacklo_epi32(a[0], a[1]);
      __m128i p01_hi = _mm_unpacklo_epi32(a[2], a[3]);
      __m128i p23_lo = _mm_unpackhi_epi32(a[0], a[1]);
      __m128i p23_hi = _mm_unpackhi_epi32(a[2], a[3]);
      plane[0][h] = _mm_unpacklo_epi64(p01_lo, p01_hi);
      plane[1][h] = _mm_unpackhi_epi64(p01_lo, p01_hi);
      plane[2][h] = _mm_unpacklo_epi64(p23_lo, p23_hi);
      plane[3][h] = _mm_unpackhi_epi64(p23_lo, p23_hi);
    }
#pragma GCC unroll 8
    for (int t = 7; t >= 0; --t) {
#pragma GCC unroll 4
      for (int p = 0; p < 4; ++p) {
        out[8 * p + t] = static_cast<uint32_t>(_mm_movemask_epi8(plane[p][0])) |
                         static_cast<uint32_t>(_mm_movemask_epi8(plane[p][1])) << 16;
        plane[p][0] = _mm_add_epi8(plane[p][0], plane[p][0]);
        plane[p][1] = _mm_add_epi8(plane[p][1], plane[p][1]);
      }
    }
  }
}

__attribute__((target("avx2"))) void transpose_blocks_avx2(const uint32_t* in, uint32_t* out,
                                                           size_t nblocks) {
  // Within each 16-byte lane (4 words): byte 4q+p -> 4p+q, so dword p of the
  // lane holds byte p of its 4 words.
  const __m256i bytes_by_plane =
      _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15, 0, 4, 8, 12, 1, 5, 9,
                       13, 2, 6, 10, 14, 3, 7, 11, 15);
  // Interleave the two lanes' dwords so that qword p holds byte p of all 8 words.
  const __m256i planes_to_qwords = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (size_t b = 0; b < nblocks; ++b, in += 32, out += 32) {
    __m256i r[4];
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + 8 * i));
      v = _mm256_shuffle_epi8(v, bytes_by_plane);
      r[i] = _mm256_permutevar8x32_epi32(v, planes_to_qwords);
    }
    // 4x4 transpose of qwords: plane p gathers qword p of r[0..3].
    __m256i lo01 = _mm256_unpacklo_epi64(r[0], r[1]);
    __m256i hi01 = _mm256_unpackhi_epi64(r[0], r[1]);
    __m256i lo23 = _mm256_unpacklo_epi64(r[2], r[3]);
    __m256i hi23 = _mm256_unpackhi_epi64(r[2], r[3]);
    __m256i p0 = _mm256_permute2x128_si256(lo01, lo23, 0x20);
    __m256i p1 = _mm256_permute2x128_si256(hi01, hi23, 0x20);
    __m256i p2 = _mm256_permute2x128_si256(lo01, lo23, 0x31);
    __m256i p3 = _mm256_permute2x128_si256(hi01, hi23, 0x31);
    // The four planes interleaved: four independent shift chains.
#pragma GCC unroll 8
    for (int t = 7; t >= 0; --t) {
      out[t] = static_cast<uint32_t>(_mm256_movemask_epi8(p0));
      out[8 + t] = static_cast<uint32_t>(_mm256_movemask_epi8(p1));
      out[16 + t] = static_cast<uint32_t>(_mm256_movemask_epi8(p2));
      out[24 + t] = static_cast<uint32_t>(_mm256_movemask_epi8(p3));
      p0 = _mm256_add_epi8(p0, p0);
      p1 = _mm256_add_epi8(p1, p1);
      p2 = _mm256_add_epi8(p2, p2);
      p3 = _mm256_add_epi8(p3, p3);
    }
  }
}
#endif

}  // namespace

void bit_transpose_32x32(const uint32_t* in, uint32_t* out, size_t nblocks, SimdLevel level) {
#ifdef CMPI_HAVE_X86_VARIANTS
  if (level == SimdLevel::kAvx2) {
    transpose_blocks_avx2(in, out, nblocks);
    return;
  }
  if (level == SimdLevel::kSsse3) {
    transpose_blocks_ssse3(in, out, nblocks);
    return;
  }
#endif
  for (size_t b = 0; b < nblocks; ++b) transpose_block_scalar(in + 32 * b, out + 32 * b);
}

}  // namespace cmpi::compress
