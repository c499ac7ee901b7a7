// ZFP fixed-rate coding of 1-D floats, the fast coder: the same bytes and
// floats as the reference (zfp_fixed_rate_reference.cpp) and libzfp.
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
#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CMPI_ZFP_AVX2 1
#endif

#include "compress/zfp_fixed_rate.h"
#include "compress/zfp_fixed_rate_block.h"

namespace cmpi::compress::zfp_fixed_rate {
namespace {

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

// The code of one plane (nibble x) given n significant values, unbudgeted,
// as the reference encoder writes it (n = 4: the 4 bits verbatim).
EncodeEntry plane_code(uint32_t n, uint32_t x) {
  uint32_t bits = x & ((1u << n) - 1), length = n;
  auto put = [&](uint32_t bit) {
    bits |= bit << length++;
    return bit;
  };
  x >>= n;
  for (; n < 4; x >>= 1, n++) {
    if (put(x != 0)) {
      for (; n < 3; x >>= 1, n++)
        if (put(x & 1u)) break;
    } else {
      break;
    }
  }
  return {static_cast<uint8_t>(bits), static_cast<uint8_t>(length), static_cast<uint8_t>(n)};
}

// The plane decoded from the bits of v given n significant values and a
// budget of `bits`, as the reference decoder reads it: where the budget cuts
// a scan, the bit the scan stopped at is set.
DecodeEntry plane_decode(uint32_t n, uint32_t bits, uint32_t v) {
  const uint32_t m = std::min(n, bits);
  uint32_t x = v & ((1u << m) - 1), pos = m;
  bits -= m;
  auto get = [&] { return (v >> pos++) & 1u; };
  for (; bits && n < 4; n++) {
    bits--;
    if (get()) {
      for (; bits && n < 3; n++) {
        bits--;
        if (get()) break;
      }
      x += 1u << n;
    } else {
      break;
    }
  }
  return {static_cast<uint8_t>(x), static_cast<uint8_t>(pos), static_cast<uint8_t>(n)};
}

Tables build_tables() {
  Tables t{};
  for (uint32_t n = 0; n <= 4; ++n) {
    for (uint32_t x = 0; x < 256; ++x) {
      const EncodeEntry a = plane_code(n, x & 15), b = plane_code(a.n, x >> 4);
      t.encode_pair[n][x] = {static_cast<uint16_t>(a.bits | (b.bits << a.length)),
                             static_cast<uint8_t>(a.length + b.length), b.n};
    }
  }
  for (uint32_t n = 0; n < 4; ++n)
    for (uint32_t x = 0; x < 16; ++x) t.encode[n][x] = plane_code(n, x);
  for (uint32_t n = 0; n <= 4; ++n) {
    for (uint32_t b = 0; b <= kPeekBits; ++b)
      for (uint32_t v = 0; v < (1u << kPeekBits); ++v) t.decode[n][b][v] = plane_decode(n, b, v);
  }
  for (int e = 0; e < 256; ++e) t.decode_scale[e] = std::ldexp(1.f, e - 157);
  return t;
}

const Tables& tables() {
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

// ---- transform, scalar ----------------------------------------------------

inline uint32_t bit_reverse(uint32_t x) {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
  return __builtin_bswap32(x);
}

// Bit j of x (j < 16) to bit 4j.
inline uint64_t spread4(uint64_t x) {
  x &= 0xffff;
  x = (x | (x << 24)) & 0x000000ff000000ffull;
  x = (x | (x << 12)) & 0x000f000f000f000full;
  x = (x | (x << 6)) & 0x0303030303030303ull;
  x = (x | (x << 3)) & 0x1111111111111111ull;
  return x;
}

// Bit 4j of x to bit j (inverse of spread4).
inline uint64_t compact4(uint64_t x) {
  x &= 0x1111111111111111ull;
  x = (x | (x >> 3)) & 0x0303030303030303ull;
  x = (x | (x >> 6)) & 0x000f000f000f000full;
  x = (x | (x >> 12)) & 0x000000ff000000ffull;
  x = (x | (x >> 24)) & 0xffff;
  return x;
}

// Biased block exponent e (0 for an all-zero block) and P of one block.
void forward_block(const float* f, uint32_t& e_out, u128& p_out) {
  uint32_t mag[4], max = 0;
  std::memcpy(mag, f, 16);
  for (uint32_t& m : mag) max = std::max(max, m &= 0x7fffffffu);
  const uint32_t e = max ? (max >> 23) + 1 : 0;  // frexp exponent + 127, >= 1
  e_out = e;
  if (e == 0) {
    p_out = 0;
    return;
  }
  // 2^(30 - emax) = 2^(157 - e) in float: infinite when it overflows.
  const uint32_t scale_bits = std::min<uint32_t>(284 - e, 255) << 23;
  float s;
  std::memcpy(&s, &scale_bits, 4);
  int32_t y[4];
  for (int i = 0; i < 4; ++i) y[i] = block::to_int(s * f[i]);
  block::fwd_lift(y);
  uint64_t lo = 0, hi = 0;
  for (int i = 0; i < 4; ++i) {
    const uint32_t r = bit_reverse(block::to_negabinary(y[i]));
    lo |= spread4(r) << i;
    hi |= spread4(r >> 16) << i;
  }
  p_out = (u128{hi} << 64) | lo;
}

void inverse_block(uint32_t e, u128 p, float* f) {
  const auto lo = static_cast<uint64_t>(p), hi = static_cast<uint64_t>(p >> 64);
  int32_t y[4];
  for (int i = 0; i < 4; ++i) {
    const auto r = static_cast<uint32_t>(compact4(lo >> i) | (compact4(hi >> i) << 16));
    y[i] = block::from_negabinary(bit_reverse(r));
  }
  block::inv_lift(y);
  const float s = tables().decode_scale[e];
  for (int i = 0; i < 4; ++i) f[i] = s * static_cast<float>(y[i]);
}

// ---- transform, AVX2: 8 blocks (32 floats) at once --------------------------
// Lane b of vector i holds value i of block b. P of block b is words
// p[0][b] (low) .. p[3][b] (high).

#ifdef CMPI_ZFP_AVX2
#define CMPI_AVX2 __attribute__((target("avx2")))

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

// The P words of 8 blocks from their negabinary values u[i] (lane = block):
// word q bit 4jj + i = bit 31 - (8q + jj) of u[i]. Bytes first: word q, byte
// i = the bit-reversed byte 3 - q of u[i] (two byte shuffles around a 32-bit
// transpose); then, within each word, bit 8i + jj moves to 4jj + i: four
// delta swaps (a rotation of the 5 bit-index bits).
CMPI_AVX2 inline void interleave8(const __m256i* u, uint32_t (*p)[8]) {
  // Byte (4q + L) of each half <- byte (4L + 3 - q): lanes L's bytes q,
  // reversed, side by side.
  const __m256i gather_rev = _mm256_setr_epi8(3, 7, 11, 15, 2, 6, 10, 14, 1, 5, 9, 13, 0, 4, 8, 12,
                                              3, 7, 11, 15, 2, 6, 10, 14, 1, 5, 9, 13, 0, 4, 8, 12);
  const __m256i transpose = _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15,
                                             0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  __m256i a[4];
  for (int i = 0; i < 4; ++i) a[i] = _mm256_shuffle_epi8(reverse_bits_in_bytes(u[i]), gather_rev);
  transpose32(a);
  for (int q = 0; q < 4; ++q) {
    __m256i x = _mm256_shuffle_epi8(a[q], transpose);
    x = delta_swap<1>(x, 0x22222222);
    x = delta_swap<7>(x, 0x00aa00aa);
    x = delta_swap<2>(x, 0x0c0c0c0c);
    x = delta_swap<14>(x, 0x0000cccc);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p[q]), x);
  }
}

// Inverse of interleave8: u[i] from the P words.
CMPI_AVX2 inline void deinterleave8(const uint32_t (*p)[8], __m256i* u) {
  const __m256i transpose = _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15,
                                             0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  // Byte (4L + q) of each half <- byte (4(3 - q) + L).
  const __m256i scatter_rev =
      _mm256_setr_epi8(12, 8, 4, 0, 13, 9, 5, 1, 14, 10, 6, 2, 15, 11, 7, 3, 12, 8, 4, 0, 13, 9, 5,
                       1, 14, 10, 6, 2, 15, 11, 7, 3);
  for (int q = 0; q < 4; ++q) {
    __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p[q]));
    x = delta_swap<14>(x, 0x0000cccc);
    x = delta_swap<2>(x, 0x0c0c0c0c);
    x = delta_swap<7>(x, 0x00aa00aa);
    x = delta_swap<1>(x, 0x22222222);
    u[q] = _mm256_shuffle_epi8(x, transpose);
  }
  transpose32(u);
  for (int i = 0; i < 4; ++i) u[i] = reverse_bits_in_bytes(_mm256_shuffle_epi8(u[i], scatter_rev));
}

// Blocks b and b + 4 as the two 128-bit halves.
CMPI_AVX2 inline __m256 load_pair(const float* f, int b) {
  return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(f + 4 * b)),
                              _mm_loadu_ps(f + 4 * b + 16), 1);
}

CMPI_AVX2 void forward8_avx2(const float* f, uint32_t* e_out, uint32_t (*p)[8]) {
  __m256 a0 = load_pair(f, 0), a1 = load_pair(f, 1), a2 = load_pair(f, 2), a3 = load_pair(f, 3);
  // Transpose within each 128-bit half: v_i = value i of blocks 0..7.
  const __m256 t0 = _mm256_unpacklo_ps(a0, a1), t1 = _mm256_unpackhi_ps(a0, a1);
  const __m256 t2 = _mm256_unpacklo_ps(a2, a3), t3 = _mm256_unpackhi_ps(a2, a3);
  __m256 v[4];
  v[0] = _mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(t0), _mm256_castps_pd(t2)));
  v[1] = _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(t0), _mm256_castps_pd(t2)));
  v[2] = _mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(t1), _mm256_castps_pd(t3)));
  v[3] = _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(t1), _mm256_castps_pd(t3)));

  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  __m256i max = _mm256_setzero_si256();
  for (auto& x : v) max = _mm256_max_epu32(max, _mm256_and_si256(_mm256_castps_si256(x), abs_mask));
  const __m256i zero = _mm256_cmpeq_epi32(max, _mm256_setzero_si256());
  const __m256i e =
      _mm256_andnot_si256(zero, _mm256_add_epi32(_mm256_srli_epi32(max, 23), _mm256_set1_epi32(1)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(e_out), e);
  const __m256i scale_exp =
      _mm256_min_epi32(_mm256_sub_epi32(_mm256_set1_epi32(284), e), _mm256_set1_epi32(255));
  const __m256 s = _mm256_castsi256_ps(_mm256_slli_epi32(scale_exp, 23));
  // cvttps gives INT_MIN for NaN and out-of-range products, as cvttss2si.
  __m256i x = _mm256_cvttps_epi32(_mm256_mul_ps(s, v[0]));
  __m256i y = _mm256_cvttps_epi32(_mm256_mul_ps(s, v[1]));
  __m256i z = _mm256_cvttps_epi32(_mm256_mul_ps(s, v[2]));
  __m256i w = _mm256_cvttps_epi32(_mm256_mul_ps(s, v[3]));
  // Forward lift (block::fwd_lift), 8 blocks per instruction.
  x = _mm256_srai_epi32(_mm256_add_epi32(x, w), 1), w = _mm256_sub_epi32(w, x);
  z = _mm256_srai_epi32(_mm256_add_epi32(z, y), 1), y = _mm256_sub_epi32(y, z);
  x = _mm256_srai_epi32(_mm256_add_epi32(x, z), 1), z = _mm256_sub_epi32(z, x);
  w = _mm256_srai_epi32(_mm256_add_epi32(w, y), 1), y = _mm256_sub_epi32(y, w);
  w = _mm256_add_epi32(w, _mm256_srai_epi32(y, 1)),
  y = _mm256_sub_epi32(y, _mm256_srai_epi32(w, 1));
  const __m256i nb = _mm256_set1_epi32(static_cast<int>(block::kNegabinaryMask));
  __m256i u[4] = {x, y, z, w};
  for (auto& ui : u) ui = _mm256_xor_si256(_mm256_add_epi32(ui, nb), nb);
  interleave8(u, p);
}

CMPI_AVX2 void inverse8_avx2(const uint32_t (*p)[8], const float* scale, float* f) {
  __m256i r[4];
  deinterleave8(p, r);
  const __m256i nb = _mm256_set1_epi32(static_cast<int>(block::kNegabinaryMask));
  for (auto& ri : r) ri = _mm256_sub_epi32(_mm256_xor_si256(ri, nb), nb);
  __m256i x = r[0], y = r[1], z = r[2], w = r[3];
  // Inverse lift (block::inv_lift).
  y = _mm256_add_epi32(y, _mm256_srai_epi32(w, 1)),
  w = _mm256_sub_epi32(w, _mm256_srai_epi32(y, 1));
  y = _mm256_add_epi32(y, w), w = _mm256_sub_epi32(_mm256_slli_epi32(w, 1), y);
  z = _mm256_add_epi32(z, x), x = _mm256_sub_epi32(_mm256_slli_epi32(x, 1), z);
  y = _mm256_add_epi32(y, z), z = _mm256_sub_epi32(_mm256_slli_epi32(z, 1), y);
  w = _mm256_add_epi32(w, x), x = _mm256_sub_epi32(_mm256_slli_epi32(x, 1), w);
  const __m256 s = _mm256_loadu_ps(scale);
  const __m256 v0 = _mm256_mul_ps(s, _mm256_cvtepi32_ps(x));
  const __m256 v1 = _mm256_mul_ps(s, _mm256_cvtepi32_ps(y));
  const __m256 v2 = _mm256_mul_ps(s, _mm256_cvtepi32_ps(z));
  const __m256 v3 = _mm256_mul_ps(s, _mm256_cvtepi32_ps(w));
  // Transpose back: half h of output vector b holds block b + 4h.
  const __m256 t0 = _mm256_unpacklo_ps(v0, v1), t1 = _mm256_unpackhi_ps(v0, v1);
  const __m256 t2 = _mm256_unpacklo_ps(v2, v3), t3 = _mm256_unpackhi_ps(v2, v3);
  const __m256 b[4] = {
      _mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(t0), _mm256_castps_pd(t2))),
      _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(t0), _mm256_castps_pd(t2))),
      _mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(t1), _mm256_castps_pd(t3))),
      _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(t1), _mm256_castps_pd(t3)))};
  for (int k = 0; k < 4; ++k) {
    _mm_storeu_ps(f + 4 * k, _mm256_castps256_ps128(b[k]));
    _mm_storeu_ps(f + 4 * k + 16, _mm256_extractf128_ps(b[k], 1));
  }
}
#endif

// ---- coding ---------------------------------------------------------------

// The first maxbits bits of a block's code.
// Planes past plane 0 would read as zero nibbles, whose codes are all zero
// bits, the same as padding: so the code need not stop exactly at plane 0.
inline u128 code_block(const Tables& t, uint32_t e, u128 p, uint32_t maxbits) {
  if (e == 0) return 0;
  u128 code = 2 * e + 1;
  if (p == 0) return code;      // 32 planes of one 0 bit each
  uint32_t j = ctz128(p) >> 2;  // planes before the first set bit: one 0 bit each
  uint32_t pos = kHeaderBits + j;
  u128 q = p >> (4 * j);  // nibble 0: plane j
  // Four planes in two table steps, without a branch (most blocks have all
  // four values significant by then: at 1..4 planes after the first set bit
  // on gradients).
  const PairEntry a = t.encode_pair[0][static_cast<uint32_t>(q) & 0xff];
  code |= u128{a.bits} << pos;
  pos += a.length;
  const PairEntry b = t.encode_pair[a.n][static_cast<uint32_t>(q >> 8) & 0xff];
  code |= u128{b.bits} << pos;
  pos += b.length;
  uint32_t n = b.n;
  q >>= 16;
  j += 4;
  while (n < 4 && j < 32 && pos < maxbits) {  // the rare long tail, plane by plane
    const EncodeEntry c = t.encode[n][static_cast<uint32_t>(q) & 15];
    code |= u128{c.bits} << pos;
    pos += c.length;
    n = c.n;
    q >>= 4;
    ++j;
  }
  if (n == 4 && j < 32 && pos < maxbits) code |= q << pos;  // the rest verbatim
  return maxbits >= 128 ? code : code & low_bits(maxbits);
}

// One plane at plane index j under the budget (a cut code included; past
// plane 0, j >= 32, nothing is deposited).
inline void decode_plane(const Tables& t, u128& w, uint32_t& budget, uint32_t& n, uint32_t& j,
                         u128& p) {
  const DecodeEntry d =
      t.decode[n][std::min(budget, kPeekBits)][static_cast<uint32_t>(w) & ((1u << kPeekBits) - 1)];
  const uint32_t nibble = j < 32 ? d.nibble : 0;
  p |= u128{nibble} << (4 * (j & 31));
  w >>= d.length;
  budget -= d.length;
  n = d.n;
  ++j;
}

// e and P of a block from its bits (bit 0 first; zero past maxbits).
inline void decode_block_bits(const Tables& t, u128 bits_in, uint32_t maxbits, uint32_t& e_out,
                              u128& p_out) {
  p_out = 0;
  if (!(bits_in & 1)) {
    e_out = 0;
    return;
  }
  e_out = static_cast<uint32_t>(bits_in >> 1) & 0xff;
  u128 w = bits_in >> kHeaderBits;
  uint32_t budget = maxbits - kHeaderBits;
  // Planes before the first set bit: one 0 bit each.
  uint32_t j = std::min({ctz128(w), budget, 32u});
  budget -= j;
  if (budget == 0 || j == 32) return;
  // Four planes without a branch (a spent budget decodes as nothing) from a
  // 64-bit window: the zero run (<= 32) and 4 codes (<= 28) fit.
  auto v = static_cast<uint64_t>(w >> j);
  uint32_t n = 0, used = 0, nibbles = 0;
  for (uint32_t k = 0; k < 4; ++k) {
    const DecodeEntry d = t.decode[n][std::min(budget, kPeekBits)]
                                  [static_cast<uint32_t>(v) & ((1u << kPeekBits) - 1)];
    nibbles |= uint32_t{d.nibble} << (4 * k);
    v >>= d.length;
    used += d.length;
    budget -= d.length;
    n = d.n;
  }
  if (j > 28) nibbles &= (1u << (4 * (32 - j))) - 1;  // planes past plane 0
  u128 p = u128{nibbles} << (4 * j);
  w >>= j + used;
  j += 4;
  // The rare long tail plane by plane, then the rest verbatim.
  while (n < 4 && budget && j < 32) decode_plane(t, w, budget, n, j, p);
  if (n == 4 && budget && j < 32) {
    const uint32_t take = std::min(budget, 4 * (32 - j));
    p |= (w & low_bits(take)) << (4 * j);
  }
  p_out = p;
}

class BitWriter {
 public:
  explicit BitWriter(uint8_t* out) : out_(out) {}
  // Appends the low `count` bits of v (count <= 64, no bits above count).
  void put(uint64_t v, uint32_t count) {
    if (count == 0) return;
    acc_ |= v << fill_;
    if (fill_ + count >= 64) {
      std::memcpy(out_, &acc_, 8);  // little-endian host: bit order of the stream
      out_ += 8;
      acc_ = fill_ ? v >> (64 - fill_) : 0;
      fill_ = fill_ + count - 64;
    } else {
      fill_ += count;
    }
  }
  void put128(u128 v, uint32_t count) {
    if (count <= 64) {
      put(static_cast<uint64_t>(v), count);
    } else {
      put(static_cast<uint64_t>(v), 64);
      put(static_cast<uint64_t>(v >> 64), count - 64);
    }
  }
  // Writes the partial last word; returns the end.
  uint8_t* flush() {
    const uint32_t bytes = (fill_ + 7) / 8;
    std::memcpy(out_, &acc_, bytes);
    return out_ + bytes;
  }

 private:
  uint8_t* out_;
  uint64_t acc_ = 0;
  uint32_t fill_ = 0;
};

// maxbits bits of the stream from bit `pos` (the rest zero).
inline u128 load_block(const uint8_t* in, size_t size, size_t pos, uint32_t maxbits) {
  const size_t at = pos / 8;
  const uint32_t shift = pos % 8;
  uint64_t word[3] = {0, 0, 0};
  if (at + 24 <= size) {
    std::memcpy(word, in + at, 24);
  } else {
    std::memcpy(word, in + at, size - at);
  }
  u128 v = ((u128{word[1]} << 64) | word[0]) >> shift;
  if (shift) v |= u128{word[2]} << (128 - shift);
  return maxbits >= 128 ? v : v & low_bits(maxbits);
}

// At least 121 bits of the stream from bit `bit` (past its end: zeros).
// kInside: the caller knows 16 bytes from bit / 8 lie inside the stream.
template <bool kInside>
inline u128 load_bits(const uint8_t* in, size_t size, size_t bit) {
  const size_t at = bit / 8;
  uint64_t word[2] = {0, 0};
  std::memcpy(word, in + at, kInside ? 16 : std::min<size_t>(16, size - at));
  return ((u128{word[1]} << 64) | word[0]) >> (bit % 8);
}

// decode_block_bits for 8 consecutive blocks from bit `first_bit`, as scales
// and P words for inverse8_avx2. Windows are loaded where each step starts,
// so they may hold the next block's bits: every step reads at most its
// budget. The four-plane stage runs in lockstep over the 8 blocks: 8
// independent lookup chains the CPU overlaps, where one block's chain alone
// would leave it waiting on each table load.
template <bool kInside>
inline void decode_group8(const Tables& t, const uint8_t* in, size_t size, size_t first_bit,
                          uint32_t maxbits, float* scale, uint32_t (*words)[8]) {
  uint64_t v[8];
  uint32_t j[8], budget[8], n[8], used[8], nibbles[8];
  for (int k = 0; k < 8; ++k) {
    const size_t bit = first_bit + size_t(k) * maxbits;
    const auto head = static_cast<uint64_t>(load_bits<kInside>(in, size, bit));
    const bool nonzero = head & 1;
    scale[k] = t.decode_scale[nonzero ? static_cast<uint32_t>(head >> 1) & 0xff : 0];
    const uint32_t b = nonzero ? maxbits - kHeaderBits : 0;
    const uint64_t rest = head >> kHeaderBits;  // 55 bits: the zero run is <= 32
    const uint32_t zeros = rest ? static_cast<uint32_t>(__builtin_ctzll(rest)) : 64;
    const uint32_t z = std::min({zeros, b, 32u});
    budget[k] = z == 32 ? 0 : b - z;  // nothing left: the stages below decode nothing
    j[k] = z;
    // The four planes' <= 28 bits are still in the first window (57 bits)
    // unless the zero run is long.
    v[k] = z <= 20 ? rest >> z
                   : static_cast<uint64_t>(load_bits<kInside>(in, size, bit + kHeaderBits + z));
    n[k] = used[k] = nibbles[k] = 0;
  }
  for (uint32_t stage = 0; stage < 4; ++stage) {
    for (int k = 0; k < 8; ++k) {
      const DecodeEntry d = t.decode[n[k]][std::min(budget[k], kPeekBits)]
                                    [static_cast<uint32_t>(v[k]) & ((1u << kPeekBits) - 1)];
      nibbles[k] |= uint32_t{d.nibble} << (4 * stage);
      v[k] >>= d.length;
      used[k] += d.length;
      budget[k] -= d.length;
      n[k] = d.n;
    }
  }
  for (int k = 0; k < 8; ++k) {
    uint32_t jk = j[k], nk = n[k], bk = budget[k], nib = nibbles[k];
    if (jk > 28) nib &= (1u << (4 * (32 - jk))) - 1;  // planes past plane 0
    u128 p = u128{nib} << (4 * (jk & 31));
    jk += 4;
    u128 wk = load_bits<kInside>(in, size,
                                 first_bit + size_t(k) * maxbits + kHeaderBits + j[k] + used[k]);
    if (nk < 4 && bk && jk < 32) {  // rare: the long tail plane by plane
      while (nk < 4 && bk && jk < 32) decode_plane(t, wk, bk, nk, jk, p);
    }
    // The rest verbatim, without a branch (take = 0: nothing).
    const uint32_t take = nk == 4 && jk < 32 ? std::min(bk, 4 * (32 - jk)) : 0;
    p |= (wk & low_bits(take)) << (4 * (jk & 31));
    const auto lo = static_cast<uint64_t>(p), hi = static_cast<uint64_t>(p >> 64);
    words[0][k] = static_cast<uint32_t>(lo), words[1][k] = static_cast<uint32_t>(lo >> 32);
    words[2][k] = static_cast<uint32_t>(hi), words[3][k] = static_cast<uint32_t>(hi >> 32);
  }
}

bool use_avx2(SimdLevel level) {
#ifdef CMPI_ZFP_AVX2
  return level == SimdLevel::kAvx2;
#else
  (void)level;
  return false;
#endif
}

}  // namespace

void encode_at(SimdLevel level, const float* in, size_t n, uint32_t maxbits, uint32_t word_bits,
               uint8_t* out) {
  const Tables& t = tables();
  BitWriter writer(out);
  const size_t blocks = n / 4;
  size_t b = 0;
#ifdef CMPI_ZFP_AVX2
  if (use_avx2(level)) {
    uint32_t e[8], p[4][8];
    for (; b + 8 <= blocks; b += 8) {
      forward8_avx2(in + 4 * b, e, p);
      for (int k = 0; k < 8; ++k) {
        const u128 pk = (u128{(uint64_t{p[3][k]} << 32) | p[2][k]} << 64) |
                        ((uint64_t{p[1][k]} << 32) | p[0][k]);
        writer.put128(code_block(t, e[k], pk, maxbits), maxbits);
      }
    }
  }
#else
  (void)level;
#endif
  for (; b < blocks; ++b) {
    uint32_t e;
    u128 p;
    forward_block(in + 4 * b, e, p);
    writer.put128(code_block(t, e, p, maxbits), maxbits);
  }
  if (n % 4) {
    float f[4];
    block::pad_partial(in + 4 * blocks, n % 4, f);
    uint32_t e;
    u128 p;
    forward_block(f, e, p);
    writer.put128(code_block(t, e, p, maxbits), maxbits);
  }
  uint8_t* end = writer.flush();
  uint8_t* const stream_end = out + stream_bytes(n, maxbits, word_bits);
  std::fill(end, stream_end, uint8_t{0});
}

void decode_at(SimdLevel level, const uint8_t* in, size_t n, uint32_t maxbits, uint32_t word_bits,
               float* out) {
  const Tables& t = tables();
  const size_t size = stream_bytes(n, maxbits, word_bits);
  const size_t blocks = (n + 3) / 4, full = n / 4;
  size_t b = 0;
#ifdef CMPI_ZFP_AVX2
  if (use_avx2(level)) {
    uint32_t p[4][8];
    float scale[8];
    for (; b + 8 <= full; b += 8) {
      const size_t first_bit = b * maxbits;
      if ((first_bit + 8 * size_t{maxbits}) / 8 + 16 <= size)
        decode_group8<true>(t, in, size, first_bit, maxbits, scale, p);
      else
        decode_group8<false>(t, in, size, first_bit, maxbits, scale, p);
      inverse8_avx2(p, scale, out + 4 * b);
    }
  }
#else
  (void)level;
#endif
  for (; b < blocks; ++b) {
    uint32_t e;
    u128 p;
    decode_block_bits(t, load_block(in, size, b * maxbits, maxbits), maxbits, e, p);
    float f[4];
    inverse_block(e, p, f);
    std::copy(f, f + std::min<size_t>(4, n - 4 * b), out + 4 * b);
  }
}

void encode(const float* in, size_t n, uint32_t maxbits, uint32_t word_bits, uint8_t* out) {
  static const SimdLevel level = best_simd_level();
  encode_at(level, in, n, maxbits, word_bits, out);
}

void decode(const uint8_t* in, size_t n, uint32_t maxbits, uint32_t word_bits, float* out) {
  static const SimdLevel level = best_simd_level();
  decode_at(level, in, n, maxbits, word_bits, out);
}

}  // namespace cmpi::compress::zfp_fixed_rate
