// Choosing a chunk's plan: for each candidate stride, a sample of up to
// kSampleBlocks blocks spread evenly over the chunk goes through stage 1
// (without reference) and the bit transposition. The reference word is then
// the bitwise majority of the sampled differences, so that XORing it in
// leaves every bit plane mostly zero. For every plane j, with and without the
// stage-3 difference from plane j - 1, the sample gives the number of nonzero
// words and nonzero bytes, hence the cost in bits of each way stage 4 can
// store that plane: whole (32 per block), per byte (4 mask bits + 8 per
// nonzero byte) or per word (1 bitmap bit + 32 if nonzero; the bitmap bits a
// group saves on planes that are zero throughout it are not modelled, so word
// planes only turn out cheaper than estimated). Sample statistics are exact
// integer counts, the same at every SimdLevel, so the plan is too.
//
// The planes are then split into the three stage-4 ranges [0, a), [a, b),
// [b, 32) and the stage-3 start c, minimizing the summed cost. For fixed
// (a, b) the best c is the one minimizing the suffix sum of the planes' cost
// change when lagged (zero for whole planes), so with running minima over c
// the search is O(33 * kMaxBytePlanes) per candidate, not O(33^3). The
// search is mpc_split_search.h's, which the device coder runs too.
#include "compress/mpc_chunk_plan.h"

#include <algorithm>
#include <cstring>
#include <iterator>

#include "compress/bit_transpose.h"
#include "compress/mpc_split_search.h"
#include "compress/word_differencing.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CMPI_HAVE_X86_VARIANTS 1
#endif

namespace cmpi::compress {
namespace {

constexpr size_t kSampleBlocks = 64;
static_assert(kSampleBlocks < 256, "per-byte zero counters must not carry");

// Bit j set where byte j of x is zero (SWAR; exact, no carries across bytes).
uint32_t zero_byte_flags(uint32_t x) {
  return (~(((x & 0x7F7F7F7Fu) + 0x7F7F7F7Fu) | x) & 0x80808080u) >> 7;
}

uint32_t sum_of_bytes(uint32_t x) {
  return (x & 0xFFu) + ((x >> 8) & 0xFFu) + ((x >> 16) & 0xFFu) + (x >> 24);
}

uint32_t popcount_swar(uint32_t x) {
  x = x - ((x >> 1) & 0x55555555u);
  x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
  x = (x + (x >> 4)) & 0x0F0F0F0Fu;
  return (x * 0x01010101u) >> 24;
}

// Zero words and zero bytes counted per plane, then turned into nonzero
// counts. The byte counters hold one count per byte position (sampled blocks
// <= kSampleBlocks < 256, so they never carry).
struct ZeroCounts {
  uint32_t words[2][32] = {};
  uint32_t byte_counters[2][32] = {};
};

MpcPlanStats stats_from(const ZeroCounts& zeros, uint32_t blocks) {
  MpcPlanStats stats;
  stats.blocks = blocks;
  for (int v = 0; v < 2; ++v) {
    for (unsigned j = 0; j < 32; ++j) {
      stats.nonzero_words[v][j] = blocks - zeros.words[v][j];
      stats.nonzero_bytes[v][j] = 4 * blocks - sum_of_bytes(zeros.byte_counters[v][j]);
    }
  }
  return stats;
}

// planes: `sampled` transposed blocks; valid[s]: the lanes of block s that
// hold values (the reference flips only those, as padding stays zero).
MpcPlanStats plane_stats_scalar(const uint32_t* planes, size_t sampled, uint32_t reference,
                                const uint32_t* valid) {
  ZeroCounts zeros;
  for (size_t s = 0; s < sampled; ++s, planes += 32) {
    uint32_t oriented[32];
    for (unsigned j = 0; j < 32; ++j)
      oriented[j] = planes[j] ^ (((reference >> j) & 1u) ? valid[s] : 0u);
    for (unsigned j = 0; j < 32; ++j) {
      const uint32_t lagged = oriented[j] - (j > 0 ? oriented[j - 1] : 0u);
      zeros.words[0][j] += oriented[j] == 0;
      zeros.words[1][j] += lagged == 0;
      zeros.byte_counters[0][j] += zero_byte_flags(oriented[j]);
      zeros.byte_counters[1][j] += zero_byte_flags(lagged);
    }
  }
  return stats_from(zeros, static_cast<uint32_t>(sampled));
}

void count_ones_scalar(const uint32_t* planes, size_t sampled, uint32_t* ones) {
  for (size_t s = 0; s < sampled; ++s)
    for (unsigned j = 0; j < 32; ++j) ones[j] += popcount_swar(planes[32 * s + j]);
}

#ifdef CMPI_HAVE_X86_VARIANTS
__attribute__((target("avx2"))) MpcPlanStats plane_stats_avx2(const uint32_t* planes,
                                                              size_t sampled, uint32_t reference,
                                                              const uint32_t* valid) {
  const __m256i zero = _mm256_setzero_si256();
  const __m256i byte_one = _mm256_set1_epi8(1);
  const __m256i shift_up_one = _mm256_setr_epi32(0, 0, 1, 2, 3, 4, 5, 6);
  __m256i flipped[4];  // planes whose reference bit is set
  for (int q = 0; q < 4; ++q) {
    const __m256i bits =
        _mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(reference)),
                          _mm256_setr_epi32(8 * q, 8 * q + 1, 8 * q + 2, 8 * q + 3, 8 * q + 4,
                                            8 * q + 5, 8 * q + 6, 8 * q + 7));
    flipped[q] = _mm256_sub_epi32(zero, _mm256_and_si256(bits, _mm256_set1_epi32(1)));
  }
  __m256i zero_words[2][4], byte_counters[2][4];
  for (int v = 0; v < 2; ++v)
    for (int q = 0; q < 4; ++q) zero_words[v][q] = byte_counters[v][q] = zero;
  alignas(32) uint32_t oriented[32];
  for (size_t s = 0; s < sampled; ++s, planes += 32) {
    const __m256i lanes = _mm256_set1_epi32(static_cast<int>(valid[s]));
    __m256i o[4];
    for (int q = 0; q < 4; ++q) {
      o[q] = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(planes + 8 * q)),
                              _mm256_and_si256(flipped[q], lanes));
      _mm256_store_si256(reinterpret_cast<__m256i*>(oriented + 8 * q), o[q]);
    }
    for (int q = 0; q < 4; ++q) {
      const __m256i below =
          q == 0 ? _mm256_blend_epi32(_mm256_permutevar8x32_epi32(o[0], shift_up_one), zero, 1)
                 : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(oriented + 8 * q - 1));
      const __m256i versions[2] = {o[q], _mm256_sub_epi32(o[q], below)};
      for (int v = 0; v < 2; ++v) {
        zero_words[v][q] =
            _mm256_sub_epi32(zero_words[v][q], _mm256_cmpeq_epi32(versions[v], zero));
        byte_counters[v][q] = _mm256_add_epi8(
            byte_counters[v][q], _mm256_and_si256(_mm256_cmpeq_epi8(versions[v], zero), byte_one));
      }
    }
  }
  ZeroCounts zeros;
  for (int v = 0; v < 2; ++v) {
    for (int q = 0; q < 4; ++q) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(zeros.words[v] + 8 * q), zero_words[v][q]);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(zeros.byte_counters[v] + 8 * q),
                          byte_counters[v][q]);
    }
  }
  return stats_from(zeros, static_cast<uint32_t>(sampled));
}

__attribute__((target("avx2"))) void count_ones_avx2(const uint32_t* planes, size_t sampled,
                                                     uint32_t* ones) {
  for (size_t s = 0; s < sampled; ++s)
    for (unsigned j = 0; j < 32; ++j)
      ones[j] += static_cast<uint32_t>(__builtin_popcount(planes[32 * s + j]));
}
#endif

// Stage 1 and the transposition on the sampled blocks, the majority
// reference, and the statistics of each plane.
MpcPlanEstimate estimate(const AliasedWord* w, size_t words, unsigned stride, SimdLevel level,
                         uint32_t* planes) {
  const size_t nblocks = (words + 31) / 32;
  const size_t step = (nblocks + kSampleBlocks - 1) / kSampleBlocks;
  size_t sampled = 0;
  uint32_t valid[kSampleBlocks];  // lanes of each sampled block that hold values
  for (size_t b = step / 2; b < nblocks; b += step, ++sampled) {
    const size_t begin = 32 * b;
    const size_t end = std::min(words, begin + 32);
    uint32_t* d = planes + 32 * sampled;
    difference_at_stride(w, begin, end, stride, 0, d, level);
    std::fill(d + (end - begin), d + 32, 0u);
    valid[sampled] = end - begin == 32 ? ~0u : (1u << (end - begin)) - 1;
  }
  bit_transpose_32x32(planes, planes, sampled, level);

  uint32_t values = 0;
  for (size_t i = 0; i < sampled; ++i) values += popcount_swar(valid[i]);
  uint32_t ones[32] = {};
#ifdef CMPI_HAVE_X86_VARIANTS
  if (level == SimdLevel::kAvx2)
    count_ones_avx2(planes, sampled, ones);
  else
#endif
    count_ones_scalar(planes, sampled, ones);
  uint32_t reference = 0;
  for (unsigned j = 0; j < 32; ++j)
    if (2 * ones[j] > values) reference |= 1u << j;

#ifdef CMPI_HAVE_X86_VARIANTS
  const MpcPlanStats stats = level == SimdLevel::kAvx2
                                 ? plane_stats_avx2(planes, sampled, reference, valid)
                                 : plane_stats_scalar(planes, sampled, reference, valid);
#else
  const MpcPlanStats stats = plane_stats_scalar(planes, sampled, reference, valid);
#endif
  return mpc_best_split(stats, stride, reference);
}

}  // namespace

std::string mpc_plan_problem(const MpcChunkPlan& plan) {
  if (plan.stride > 32) return "stride " + std::to_string(plan.stride) + " is above 32";
  if (plan.first_lagged < 1 || plan.first_lagged > 32)
    return "first lagged plane " + std::to_string(plan.first_lagged) + " is outside 1..32";
  if (plan.first_word_plane > 32 || plan.first_byte_plane > plan.first_word_plane)
    return "plane ranges [0, " + std::to_string(plan.first_byte_plane) + ", " +
           std::to_string(plan.first_word_plane) + ", 32] are out of order";
  if (plan.first_word_plane - plan.first_byte_plane > kMaxBytePlanes)
    return std::to_string(plan.first_word_plane - plan.first_byte_plane) +
           " byte-eliminated planes, more than " + std::to_string(kMaxBytePlanes);
  return {};
}

void write_mpc_plan(const MpcChunkPlan& plan, uint8_t* out) {
  out[0] = static_cast<uint8_t>(plan.stride);
  out[1] = static_cast<uint8_t>(plan.first_lagged);
  out[2] = static_cast<uint8_t>(plan.first_byte_plane);
  out[3] = static_cast<uint8_t>(plan.first_word_plane);
  std::memcpy(out + 4, &plan.reference, 4);
}

MpcChunkPlan read_mpc_plan(const uint8_t* in) {
  MpcChunkPlan plan;
  plan.stride = in[0];
  plan.first_lagged = in[1];
  plan.first_byte_plane = in[2];
  plan.first_word_plane = in[3];
  std::memcpy(&plan.reference, in + 4, 4);
  return plan;
}

MpcChunkPlan choose_mpc_plan(const float* in, size_t words, unsigned dim, SimdLevel level) {
  static constexpr unsigned kAutoStrides[] = {1, 2, 4, 8, 16, 32, 0};
  const unsigned fixed[] = {dim, 0};
  const unsigned* strides = dim == 0 ? kAutoStrides : fixed;
  const size_t count = dim == 0 ? std::size(kAutoStrides) : 2;

  alignas(32) uint32_t planes[32 * kSampleBlocks];
  const auto* w = reinterpret_cast<const AliasedWord*>(in);
  MpcPlanEstimate best{MpcChunkPlan{}, kMpcNoEstimate};
  for (size_t i = 0; i < count; ++i) {
    MpcPlanEstimate e = estimate(w, words, strides[i], level, planes);
    if (e.bits < best.bits) best = e;
  }
  return best.plan;
}

}  // namespace cmpi::compress
