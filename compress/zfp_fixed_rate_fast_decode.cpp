// The fast ZFP coder's decoder (zfp_fixed_rate_fast.h says how the coder
// works): each block's bits loaded from its fixed offset (b * maxbits), its
// planes read through the decode table under the remaining budget (four
// planes without a branch; 8 blocks in lockstep on the AVX2 path), and P
// taken back through the de-interleave, negabinary and inverse lifting
// transform to floats.
#include <algorithm>
#include <cstring>

#include "compress/zfp_fixed_rate.h"
#include "compress/zfp_fixed_rate_block.h"
#include "compress/zfp_fixed_rate_fast.h"

namespace cmpi::compress::zfp_fixed_rate {
namespace {

using fast::bit_reverse;
using fast::ctz128;
using fast::DecodeEntry;
using fast::kHeaderBits;
using fast::kPeekBits;
using fast::low_bits;
using fast::Tables;
using fast::tables;
using fast::u128;
using fast::use_avx2;

// ---- transform, scalar ----------------------------------------------------

// Bit 4j of x to bit j (inverse of spread4).
inline uint64_t compact4(uint64_t x) {
  x &= 0x1111111111111111ull;
  x = (x | (x >> 3)) & 0x0303030303030303ull;
  x = (x | (x >> 6)) & 0x000f000f000f000full;
  x = (x | (x >> 12)) & 0x000000ff000000ffull;
  x = (x | (x >> 24)) & 0xffff;
  return x;
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
using fast::delta_swap;
using fast::reverse_bits_in_bytes;
using fast::transpose32;

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

}  // namespace

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

void decode(const uint8_t* in, size_t n, uint32_t maxbits, uint32_t word_bits, float* out) {
  static const SimdLevel level = best_simd_level();
  decode_at(level, in, n, maxbits, word_bits, out);
}

}  // namespace cmpi::compress::zfp_fixed_rate
