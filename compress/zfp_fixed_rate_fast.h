// The fast ZFP fixed-rate coder of 1-D floats (zfp_fixed_rate.h): the same
// bytes and floats as the reference (zfp_fixed_rate_reference.cpp) and libzfp.
// This header holds what its encoder (zfp_fixed_rate_fast_encode.cpp) and
// decoder (zfp_fixed_rate_fast_decode.cpp) share: the plane-code tables
// (built once, zfp_fixed_rate_fast_tables.cpp), 128-bit helpers, and the
// AVX2 bit shuffles both directions of the transform use. Only those three
// files include it.
//
// How it works. A block's coefficients are held as one 128-bit word P whose
// nibble j holds bit plane 31 - j (bit i of the nibble: value i), so the
// planes come out in coding order from the bottom of P. Two stages:
//   transform (8 blocks per AVX2 call, else per block in scalar code):
//     exponent, float -> int cast, lifting transform, negabinary, bit
//     reversal and a 4-way bit interleave into P (and back, for decode);
//   coding (scalar): a block's code is a prefix of its unbudgeted code,
//     because libzfp emits bits in order and stops at the budget. So the
//     encoder builds the code in a 128-bit accumulator without counting the
//     budget bit by bit, and keeps the first maxbits bits:
//     - leading planes with no significant value cost one 0 bit each: their
//       count is ctz(P) / 4, skipped in one step;
//     - the next four planes: two lookups in a table indexed by (n values
//       significant so far, two nibbles) giving code bits, length and new n,
//       with no branch (n = 4 rows: the bits verbatim);
//     - the rare blocks still with n < 4 go on plane by plane; once n = 4
//       every plane is its 4 bits verbatim: the rest of P in one OR.
//     The decoder mirrors this with a table indexed by (n, the block's
//     remaining budget capped at 7, next 7 bits) (7: the longest plane code).
//     The budget index makes a code the budget cuts decode as libzfp's
//     decoder does (it sets the bit the cut scan stopped at) and a spent
//     budget decode as nothing, so four planes need no branch either; the
//     AVX2 path runs those four lookups in lockstep over 8 blocks.
// Blocks sit at fixed bit offsets (b * maxbits), so the decoder loads each
// block's bits directly; the encoder appends blocks through a 64-bit buffer.
//
// Speed (docs/benchmarks.md; captured gradients, one core of the 2-core AMD
// EPYC development VM): encode 1.2 GB/s, decode 0.96-0.99 GB/s at rates 8
// and 16 (libzfp: 0.13-0.27), where memcpy of the same 0.5 MB, in cache,
// runs at ~80-90 GB/s: the coder is ~1.5 % of memcpy, ~50-70 cycles per 4-value block
// against memcpy's < 1. What bounds it (perf record,
// cpu-clock; the VM has no hardware counters): in decode, the lookup chains
// (each plane's lookup waits for the previous one's length and n; lockstep
// over 8 blocks overlaps them) and the scalar glue around them (window
// loads, 128-bit shifts, the verbatim rest), ~80 %, with no single hot spot;
// the SIMD de-interleave and inverse transform take the other ~20 % (~200
// vector ops per 8 blocks, 96 of them the delta swaps). In encode, the ctz
// -> shift -> two dependent pair lookups (~50 %), the SIMD forward transform
// and interleave (~30 %) and the bit writer. The coding is serial per block
// and bit-granular; only the per-block arithmetic is SIMD.
#pragma once

#include <cstdint>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CMPI_ZFP_AVX2 1
#endif

#include "compress/simd_level.h"

namespace cmpi::compress::zfp_fixed_rate::fast {

using u128 = unsigned __int128;

constexpr uint32_t kHeaderBits = 9;
constexpr uint32_t kPeekBits = 7;  // longest code of one bit plane

struct EncodeEntry {
  uint8_t bits, length, n;
};
struct PairEntry {  // the codes of two planes back to back
  uint16_t bits;
  uint8_t length, n;
};
struct DecodeEntry {
  uint8_t nibble, length, n;
};
struct Tables {
  EncodeEntry encode[4][16];
  PairEntry encode_pair[5][256];  // [n][plane j | plane j + 1 << 4]; n = 4: verbatim
  // [n][remaining budget, capped at 7][next 7 bits]: a plane as the
  // reference decodes it under that budget (a cut code included).
  // n = 4: the 4 bits verbatim.
  DecodeEntry decode[5][kPeekBits + 1][1 << kPeekBits];
  float decode_scale[256];  // 2^(e - 157): float step of the block's ints
};

// The tables, built on first use (one instance for the program).
Tables build_tables();
inline const Tables& tables() {
  static const Tables t = build_tables();
  return t;
}

inline uint32_t ctz128(u128 x) {
  const auto lo = static_cast<uint64_t>(x);
  if (lo) return static_cast<uint32_t>(__builtin_ctzll(lo));
  const auto hi = static_cast<uint64_t>(x >> 64);
  return hi ? 64 + static_cast<uint32_t>(__builtin_ctzll(hi)) : 128;
}

inline u128 low_bits(uint32_t count) {  // count < 128
  return (u128{1} << count) - 1;
}

inline uint32_t bit_reverse(uint32_t x) {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
  return __builtin_bswap32(x);
}

inline bool use_avx2(SimdLevel level) {
#ifdef CMPI_ZFP_AVX2
  return level == SimdLevel::kAvx2;
#else
  (void)level;
  return false;
#endif
}

#ifdef CMPI_ZFP_AVX2
#define CMPI_AVX2 __attribute__((target("avx2")))

// ---- AVX2 bit shuffles (8 blocks a call): lane b holds block b ------------

// Exchanges the bits selected by m with those d places above them.
template <int D>
CMPI_AVX2 inline __m256i delta_swap(__m256i x, int m) {
  const __m256i t =
      _mm256_and_si256(_mm256_xor_si256(_mm256_srli_epi32(x, D), x), _mm256_set1_epi32(m));
  return _mm256_xor_si256(_mm256_xor_si256(x, t), _mm256_slli_epi32(t, D));
}

CMPI_AVX2 inline __m256i reverse_bits_in_bytes(__m256i x) {
  const __m256i rev_lo = _mm256_setr_epi8(0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15, 0,
                                          8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15);
  const __m256i rev_hi = _mm256_slli_epi16(rev_lo, 4);
  const __m256i nib = _mm256_set1_epi8(0x0f);
  const __m256i lo = _mm256_and_si256(x, nib);
  const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(x, 4), nib);
  return _mm256_or_si256(_mm256_shuffle_epi8(rev_hi, lo), _mm256_shuffle_epi8(rev_lo, hi));
}

// 4x4 transpose of 32-bit elements across a[0..3], within each 128-bit half.
CMPI_AVX2 inline void transpose32(__m256i* a) {
  const __m256i t0 = _mm256_unpacklo_epi32(a[0], a[1]), t1 = _mm256_unpackhi_epi32(a[0], a[1]);
  const __m256i t2 = _mm256_unpacklo_epi32(a[2], a[3]), t3 = _mm256_unpackhi_epi32(a[2], a[3]);
  a[0] = _mm256_unpacklo_epi64(t0, t2), a[1] = _mm256_unpackhi_epi64(t0, t2);
  a[2] = _mm256_unpacklo_epi64(t1, t3), a[3] = _mm256_unpackhi_epi64(t1, t3);
}

#endif

}  // namespace cmpi::compress::zfp_fixed_rate::fast
