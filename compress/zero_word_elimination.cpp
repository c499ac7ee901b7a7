// Scalar variants are branch-free: every word is stored at the output cursor,
// which advances only past kept ones (hence one word of slack). The keep and
// skip masks enter each lane mask with one OR and one AND-NOT.
//
// SSSE3 variants do the same with 4 words at a time, byte shuffles (pshufb)
// from 16-entry tables; a shuffle index with its top bit set writes a zero.
//
// AVX2 variants work on 8 words at a time with an 8-bit lane mask. Packing
// permutes the nonzero lanes to the front (vpermd) and stores the whole
// vector; unpacking loads 8 packed words and permutes them out to their lanes,
// zeroing the others. The permutations come from two 256-entry tables of lane
// indices (3 bits each, packed as nibbles in a u32) computed at compile time.
#include "compress/zero_word_elimination.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CMPI_HAVE_X86_VARIANTS 1
#endif

namespace cmpi::compress {
namespace {

#ifdef CMPI_HAVE_X86_VARIANTS
using ByteShuffle = std::array<uint8_t, 16>;

// For each 4-lane mask m: the byte shuffle that moves the set lanes to the front.
constexpr std::array<ByteShuffle, 16> make_pack_shuffles() {
  std::array<ByteShuffle, 16> table{};
  for (uint32_t m = 0; m < 16; ++m) {
    for (auto& index : table[m]) index = 0x80;
    uint32_t r = 0;
    for (uint32_t lane = 0; lane < 4; ++lane) {
      if (!(m & (1u << lane))) continue;
      for (uint32_t byte = 0; byte < 4; ++byte) table[m][4 * r + byte] = uint8_t(4 * lane + byte);
      ++r;
    }
  }
  return table;
}

// For each 4-lane mask m: the byte shuffle that moves packed words out to the
// set lanes and zeroes the others.
constexpr std::array<ByteShuffle, 16> make_unpack_shuffles() {
  std::array<ByteShuffle, 16> table{};
  for (uint32_t m = 0; m < 16; ++m) {
    for (auto& index : table[m]) index = 0x80;
    uint32_t r = 0;
    for (uint32_t lane = 0; lane < 4; ++lane) {
      if (!(m & (1u << lane))) continue;
      for (uint32_t byte = 0; byte < 4; ++byte) table[m][4 * lane + byte] = uint8_t(4 * r + byte);
      ++r;
    }
  }
  return table;
}

constexpr std::array<ByteShuffle, 16> kPackShuffles = make_pack_shuffles();
constexpr std::array<ByteShuffle, 16> kUnpackShuffles = make_unpack_shuffles();

__attribute__((target("ssse3,popcnt"))) inline __m128i shuffle_of(const ByteShuffle& s) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(s.data()));
}

__attribute__((target("ssse3,popcnt"))) size_t pack_nonzero_words_ssse3(
    const uint32_t* in, size_t nblocks, uint32_t keep, uint32_t skip, uint32_t* bitmaps,
    uint8_t* packed) {
  const __m128i zero = _mm_setzero_si128();
  size_t count = 0;
  for (size_t b = 0; b < nblocks; ++b) {
    uint32_t bitmap = 0;
#pragma GCC unroll 8
    for (int q = 0; q < 8; ++q) {
      __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 32 * b + 4 * q));
      uint32_t zero_lanes =
          static_cast<uint32_t>(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(v, zero))));
      uint32_t nonzero = ((~zero_lanes | (keep >> (4 * q))) & ~(skip >> (4 * q))) & 0xFu;
      _mm_storeu_si128(reinterpret_cast<__m128i*>(packed + 4 * count),
                       _mm_shuffle_epi8(v, shuffle_of(kPackShuffles[nonzero])));
      count += static_cast<size_t>(__builtin_popcount(nonzero));
      bitmap |= nonzero << (4 * q);
    }
    bitmaps[b] = bitmap;
  }
  return count;
}

__attribute__((target("ssse3,popcnt"))) void unpack_nonzero_words_ssse3(const uint32_t* bitmaps,
                                                                        const uint8_t* packed,
                                                                        size_t nblocks,
                                                                        uint32_t* out) {
  size_t count = 0;
  for (size_t b = 0; b < nblocks; ++b) {
    uint32_t bitmap = bitmaps[b];
#pragma GCC unroll 8
    for (int q = 0; q < 8; ++q, bitmap >>= 4) {
      uint32_t nonzero = bitmap & 0xFu;
      __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed + 4 * count));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 32 * b + 4 * q),
                       _mm_shuffle_epi8(v, shuffle_of(kUnpackShuffles[nonzero])));
      count += static_cast<size_t>(__builtin_popcount(nonzero));
    }
  }
}

// For each lane mask m: nibble r = index of the r-th set lane.
constexpr std::array<uint32_t, 256> make_pack_lanes() {
  std::array<uint32_t, 256> table{};
  for (uint32_t m = 0; m < 256; ++m) {
    uint32_t r = 0;
    for (uint32_t lane = 0; lane < 8; ++lane)
      if (m & (1u << lane)) table[m] |= lane << (4 * r++);
  }
  return table;
}

// For each lane mask m: nibble lane = rank of that lane among the set lanes.
constexpr std::array<uint32_t, 256> make_unpack_lanes() {
  std::array<uint32_t, 256> table{};
  for (uint32_t m = 0; m < 256; ++m) {
    uint32_t r = 0;
    for (uint32_t lane = 0; lane < 8; ++lane)
      if (m & (1u << lane)) table[m] |= (r++) << (4 * lane);
  }
  return table;
}

constexpr std::array<uint32_t, 256> kPackLanes = make_pack_lanes();
constexpr std::array<uint32_t, 256> kUnpackLanes = make_unpack_lanes();

__attribute__((target("avx2"))) inline __m256i lane_indices(uint32_t nibbles) {
  // vpermd reads only the low 3 bits of each index, so the higher nibbles
  // left above each lane's own do not matter.
  return _mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(nibbles)),
                           _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28));
}

__attribute__((target("avx2"))) size_t pack_nonzero_words_avx2(const uint32_t* in, size_t nblocks,
                                                               uint32_t keep, uint32_t skip,
                                                               uint32_t* bitmaps, uint8_t* packed) {
  const __m256i zero = _mm256_setzero_si256();
  size_t count = 0;
  for (size_t b = 0; b < nblocks; ++b) {
    uint32_t bitmap = 0;
    for (int q = 0; q < 4; ++q) {
      __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + 32 * b + 8 * q));
      uint32_t zero_lanes = static_cast<uint32_t>(
          _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(v, zero))));
      uint32_t nonzero = ((~zero_lanes | (keep >> (8 * q))) & ~(skip >> (8 * q))) & 0xFFu;
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(packed + 4 * count),
                          _mm256_permutevar8x32_epi32(v, lane_indices(kPackLanes[nonzero])));
      count += static_cast<size_t>(__builtin_popcount(nonzero));
      bitmap |= nonzero << (8 * q);
    }
    bitmaps[b] = bitmap;
  }
  return count;
}

__attribute__((target("avx2"))) void unpack_nonzero_words_avx2(const uint32_t* bitmaps,
                                                               const uint8_t* packed,
                                                               size_t nblocks, uint32_t* out) {
  const __m256i lane_bits = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  size_t count = 0;
  for (size_t b = 0; b < nblocks; ++b) {
    uint32_t bitmap = bitmaps[b];
    for (int q = 0; q < 4; ++q, bitmap >>= 8) {
      uint32_t nonzero = bitmap & 0xFFu;
      __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(packed + 4 * count));
      v = _mm256_permutevar8x32_epi32(v, lane_indices(kUnpackLanes[nonzero]));
      __m256i keep = _mm256_cmpeq_epi32(
          _mm256_and_si256(_mm256_set1_epi32(static_cast<int>(nonzero)), lane_bits), lane_bits);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 32 * b + 8 * q),
                          _mm256_and_si256(v, keep));
      count += static_cast<size_t>(__builtin_popcount(nonzero));
    }
  }
}
#endif

}  // namespace

size_t pack_nonzero_words(const uint32_t* in, size_t nblocks, uint32_t keep, uint32_t skip,
                          uint32_t* bitmaps, uint8_t* packed, SimdLevel level) {
#ifdef CMPI_HAVE_X86_VARIANTS
  if (level == SimdLevel::kAvx2)
    return pack_nonzero_words_avx2(in, nblocks, keep, skip, bitmaps, packed);
  if (level == SimdLevel::kSsse3)
    return pack_nonzero_words_ssse3(in, nblocks, keep, skip, bitmaps, packed);
#endif
  size_t count = 0;
  for (size_t b = 0; b < nblocks; ++b) {
    uint32_t bitmap = 0;
    for (uint32_t j = 0; j < 32; ++j) {
      uint32_t word = in[32 * b + j];
      std::memcpy(packed + 4 * count, &word, 4);
      uint32_t nonzero = ((word != 0) | (keep >> j)) & ~(skip >> j) & 1u;
      bitmap |= nonzero << j;
      count += nonzero;
    }
    bitmaps[b] = bitmap;
  }
  return count;
}

void unpack_nonzero_words(const uint32_t* bitmaps, const uint8_t* packed, size_t nblocks,
                          uint32_t* out, SimdLevel level) {
#ifdef CMPI_HAVE_X86_VARIANTS
  if (level == SimdLevel::kAvx2) return unpack_nonzero_words_avx2(bitmaps, packed, nblocks, out);
  if (level == SimdLevel::kSsse3) return unpack_nonzero_words_ssse3(bitmaps, packed, nblocks, out);
#endif
  size_t count = 0;
  for (size_t b = 0; b < nblocks; ++b) {
    for (uint32_t j = 0; j < 32; ++j) {
      uint32_t nonzero = (bitmaps[b] >> j) & 1u;
      uint32_t word;
      std::memcpy(&word, packed + 4 * count, 4);
      out[32 * b + j] = nonzero ? word : 0u;
      count += nonzero;
    }
  }
}

}  // namespace cmpi::compress
