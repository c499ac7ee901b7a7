// One xoshiro128** step per lane: result = rotl(s1 * 5, 7) * 9, then the
// linear state update (xors, a shift, a rotation). Multiplications by 5 and 9
// are shift-and-add, so the whole step is SSE2 integer arithmetic on four
// lanes at once (SSE2 is part of every x86-64 CPU, so no dispatch is needed).
#include "compress/random_blocks.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "compress/random_stream.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace cmpi::compress {
namespace {

uint32_t rotl(uint32_t x, int k) {
  return (x << k) | (x >> (32 - k));
}

void check_bits(unsigned bits) {
  if (bits < 1 || bits > 32)
    throw std::invalid_argument("RandomBlocks: bits must be in 1..32, got " + std::to_string(bits));
}

#if defined(__SSE2__)
template <int k>
__m128i rotl4(__m128i x) {
  return _mm_or_si128(_mm_slli_epi32(x, k), _mm_srli_epi32(x, 32 - k));
}
#endif

}  // namespace

RandomBlocks::RandomBlocks(uint64_t seed) {
  RandomStream seeder(seed);
  for (int lane = 0; lane < 4; ++lane) {
    uint64_t a = seeder.next(), b = seeder.next();
    if ((a | b) == 0) a = 1;  // the all-zero state is xoshiro's only fixed point
    state_[0][lane] = uint32_t(a);
    state_[1][lane] = uint32_t(a >> 32);
    state_[2][lane] = uint32_t(b);
    state_[3][lane] = uint32_t(b >> 32);
  }
}

std::vector<uint64_t> RandomBlocks::state() const {
  std::vector<uint64_t> words(8);
  for (int w = 0; w < 4; ++w)
    for (int pair = 0; pair < 2; ++pair)
      words[size_t(2 * w + pair)] =
          uint64_t(state_[w][2 * pair]) | uint64_t(state_[w][2 * pair + 1]) << 32;
  return words;
}

void RandomBlocks::set_state(const std::vector<uint64_t>& words, const std::string& owner) {
  if (words.size() != 8)
    throw std::invalid_argument(owner + ": random state of " + std::to_string(words.size()) +
                                " words, expected 8");
  for (int w = 0; w < 4; ++w)
    for (int pair = 0; pair < 2; ++pair) {
      const uint64_t word = words[size_t(2 * w + pair)];
      state_[w][2 * pair] = uint32_t(word);
      state_[w][2 * pair + 1] = uint32_t(word >> 32);
    }
}

void RandomBlocks::fill_reference(uint32_t* out, size_t count, unsigned bits) {
  check_bits(bits);
  for (size_t j = 0; j < count; j += 4) {
    for (size_t lane = 0; lane < 4; ++lane) {
      const uint32_t s1 = state_[1][lane];
      const uint32_t result = rotl(s1 * 5, 7) * 9;
      const uint32_t t = s1 << 9;
      state_[2][lane] ^= state_[0][lane];
      state_[3][lane] ^= state_[1][lane];
      state_[1][lane] ^= state_[2][lane];
      state_[0][lane] ^= state_[3][lane];
      state_[2][lane] ^= t;
      state_[3][lane] = rotl(state_[3][lane], 11);
      if (j + lane < count) out[j + lane] = result >> (32 - bits);
    }
  }
}

void RandomBlocks::fill(uint32_t* out, size_t count, unsigned bits) {
  check_bits(bits);
#if defined(__SSE2__)
  const int drop = int(32 - bits);
  __m128i s0 = _mm_load_si128(reinterpret_cast<const __m128i*>(state_[0]));
  __m128i s1 = _mm_load_si128(reinterpret_cast<const __m128i*>(state_[1]));
  __m128i s2 = _mm_load_si128(reinterpret_cast<const __m128i*>(state_[2]));
  __m128i s3 = _mm_load_si128(reinterpret_cast<const __m128i*>(state_[3]));
  const __m128i shift = _mm_cvtsi32_si128(drop);
  for (size_t j = 0; j < count; j += 4) {
    const __m128i times5 = _mm_add_epi32(_mm_slli_epi32(s1, 2), s1);
    const __m128i rotated = rotl4<7>(times5);
    const __m128i result = _mm_srl_epi32(_mm_add_epi32(_mm_slli_epi32(rotated, 3), rotated), shift);
    const __m128i t = _mm_slli_epi32(s1, 9);
    s2 = _mm_xor_si128(s2, s0);
    s3 = _mm_xor_si128(s3, s1);
    s1 = _mm_xor_si128(s1, s2);
    s0 = _mm_xor_si128(s0, s3);
    s2 = _mm_xor_si128(s2, t);
    s3 = rotl4<11>(s3);
    if (count - j >= 4) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j), result);
    } else {
      alignas(16) uint32_t last[4];
      _mm_store_si128(reinterpret_cast<__m128i*>(last), result);
      std::copy(last, last + (count - j), out + j);
    }
  }
  _mm_store_si128(reinterpret_cast<__m128i*>(state_[0]), s0);
  _mm_store_si128(reinterpret_cast<__m128i*>(state_[1]), s1);
  _mm_store_si128(reinterpret_cast<__m128i*>(state_[2]), s2);
  _mm_store_si128(reinterpret_cast<__m128i*>(state_[3]), s3);
#else
  fill_reference(out, count, bits);
#endif
}

}  // namespace cmpi::compress
