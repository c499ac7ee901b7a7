// The fast ZFP coder's encoder (zfp_fixed_rate_fast.h says how the coder
// works): per block the exponent, block floating point, lifting transform,
// negabinary and the interleave into P (8 blocks per AVX2 call, else
// scalar), then the block's code built in a 128-bit accumulator from the
// pair table, cut at maxbits and appended to the stream through a 64-bit
// bit writer.
#include <algorithm>
#include <cstring>

#include "compress/zfp_fixed_rate.h"
#include "compress/zfp_fixed_rate_block.h"
#include "compress/zfp_fixed_rate_fast.h"

namespace cmpi::compress::zfp_fixed_rate {
namespace {

using fast::bit_reverse;
using fast::ctz128;
using fast::EncodeEntry;
using fast::kHeaderBits;
using fast::low_bits;
using fast::PairEntry;
using fast::Tables;
using fast::tables;
using fast::u128;
using fast::use_avx2;

// ---- transform, scalar ----------------------------------------------------

// Bit j of x (j < 16) to bit 4j.
inline uint64_t spread4(uint64_t x) {
  x &= 0xffff;
  x = (x | (x << 24)) & 0x000000ff000000ffull;
  x = (x | (x << 12)) & 0x000f000f000f000full;
  x = (x | (x << 6)) & 0x0303030303030303ull;
  x = (x | (x << 3)) & 0x1111111111111111ull;
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

// ---- transform, AVX2: 8 blocks (32 floats) at once --------------------------
// Lane b of vector i holds value i of block b. P of block b is words
// p[0][b] (low) .. p[3][b] (high).

#ifdef CMPI_ZFP_AVX2
using fast::delta_swap;
using fast::reverse_bits_in_bytes;
using fast::transpose32;

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

void encode(const float* in, size_t n, uint32_t maxbits, uint32_t word_bits, uint8_t* out) {
  static const SimdLevel level = best_simd_level();
  encode_at(level, in, n, maxbits, word_bits, out);
}

}  // namespace cmpi::compress::zfp_fixed_rate
