// Two implementations of the 32x32 bit transpose, bit-identical:
//
// scalar: the recursive block swap. A 32x32 bit matrix is transposed by
//   swapping its off-diagonal 16x16 blocks, then the off-diagonal 8x8 blocks
//   inside each 16x16 block, and so on down to 1x1: five rounds, each a
//   masked shift-and-xor over 16 pairs of words (rows k and k+j, j = 16..1).
//
// avx2: bit-plane extraction with movemask. The 128 bytes of a block are
//   first regrouped (byte shuffles) into four 32-byte vectors, vector p
//   holding byte p of words 0..31 in order. _mm256_movemask_epi8 then collects
//   the top bit of each of the 32 bytes, i.e. bit 8p+7 of every word: that is
//   output word 8p+7. Doubling every byte moves the next bit to the top; eight
//   rounds per vector yield all 32 output words.
#include "compress/bit_transpose.h"

#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CMPI_HAVE_AVX2_VARIANT 1
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

#ifdef CMPI_HAVE_AVX2_VARIANT
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
    __m256i plane[4] = {
        _mm256_permute2x128_si256(lo01, lo23, 0x20), _mm256_permute2x128_si256(hi01, hi23, 0x20),
        _mm256_permute2x128_si256(lo01, lo23, 0x31), _mm256_permute2x128_si256(hi01, hi23, 0x31)};
    for (int p = 0; p < 4; ++p) {
      __m256i v = plane[p];
      for (int t = 7; t >= 0; --t) {
        out[8 * p + t] = static_cast<uint32_t>(_mm256_movemask_epi8(v));
        v = _mm256_add_epi8(v, v);
      }
    }
  }
}
#endif

}  // namespace

void bit_transpose_32x32(const uint32_t* in, uint32_t* out, size_t nblocks, SimdLevel level) {
#ifdef CMPI_HAVE_AVX2_VARIANT
  if (level == SimdLevel::kAvx2) {
    transpose_blocks_avx2(in, out, nblocks);
    return;
  }
#endif
  for (size_t b = 0; b < nblocks; ++b) transpose_block_scalar(in + 32 * b, out + 32 * b);
}

}  // namespace cmpi::compress
