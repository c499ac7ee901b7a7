// The bytes of words [first, last) of a block are contiguous (little-endian
// words), so a block's mask bits are simply its bytes' nonzero flags in
// memory order.
//
// Scalar variants are branch-free, as the bytes kept are data-dependent:
// every byte is stored at the output cursor (or loaded at the input cursor)
// and the cursor advances by the byte's nonzero flag.
//
// SSSE3 variants (also used at the AVX2 level) take 8 bytes at a time: a
// compare and movemask give their 8 nonzero flags, and a byte shuffle
// (pshufb) from a 256-entry table moves the nonzero bytes to the front
// (packing) or out to their positions, zeroing the others (unpacking); the
// whole 8 bytes are stored and the cursor advances by the popcount.
#include "compress/zero_byte_elimination.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CMPI_HAVE_X86_VARIANTS 1
#endif

namespace cmpi::compress {
namespace {

size_t pack_nonzero_bytes_scalar(const uint32_t* in, size_t nblocks, unsigned first, unsigned last,
                                 uint64_t* masks, uint8_t* packed) {
  const unsigned nbytes = 4 * (last - first);
  size_t count = 0;
  for (size_t b = 0; b < nblocks; ++b) {
    const auto* bytes = reinterpret_cast<const uint8_t*>(in + 32 * b + first);
    uint64_t mask = 0;
    for (unsigned i = 0; i < nbytes; ++i) {
      const uint64_t nonzero = bytes[i] != 0;
      packed[count] = bytes[i];
      count += nonzero;
      mask |= nonzero << i;
    }
    masks[b] = mask;
  }
  return count;
}

void unpack_nonzero_bytes_scalar(const uint64_t* masks, const uint8_t* packed, size_t nblocks,
                                 unsigned first, unsigned last, uint32_t* out) {
  const unsigned nbytes = 4 * (last - first);
  size_t count = 0;
  for (size_t b = 0; b < nblocks; ++b) {
    auto* bytes = reinterpret_cast<uint8_t*>(out + 32 * b + first);
    const uint64_t mask = masks[b];
    for (unsigned i = 0; i < nbytes; ++i) {
      const auto nonzero = static_cast<unsigned>((mask >> i) & 1u);
      bytes[i] = static_cast<uint8_t>(packed[count] & (0u - nonzero));
      count += nonzero;
    }
  }
}

#ifdef CMPI_HAVE_X86_VARIANTS
using Shuffle8 = std::array<uint8_t, 8>;

// For each 8-bit mask m: the shuffle moving the bytes set in m to the front.
constexpr std::array<Shuffle8, 256> make_pack_shuffles() {
  std::array<Shuffle8, 256> table{};
  for (unsigned m = 0; m < 256; ++m) {
    for (auto& index : table[m]) index = 0x80;
    unsigned r = 0;
    for (unsigned i = 0; i < 8; ++i)
      if (m & (1u << i)) table[m][r++] = static_cast<uint8_t>(i);
  }
  return table;
}

// For each 8-bit mask m: the shuffle moving packed bytes out to the positions
// set in m, zeroing the others.
constexpr std::array<Shuffle8, 256> make_unpack_shuffles() {
  std::array<Shuffle8, 256> table{};
  for (unsigned m = 0; m < 256; ++m) {
    for (auto& index : table[m]) index = 0x80;
    unsigned r = 0;
    for (unsigned i = 0; i < 8; ++i)
      if (m & (1u << i)) table[m][i] = static_cast<uint8_t>(r++);
  }
  return table;
}

constexpr std::array<Shuffle8, 256> kPackShuffles = make_pack_shuffles();
constexpr std::array<Shuffle8, 256> kUnpackShuffles = make_unpack_shuffles();

__attribute__((target("ssse3,popcnt"))) inline __m128i load_shuffle(const Shuffle8& s) {
  return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(s.data()));
}

// The first n (4 or 8) bytes at p, zero-extended.
__attribute__((target("ssse3,popcnt"))) inline __m128i load_bytes(const uint8_t* p, unsigned n) {
  if (n == 8) return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  uint32_t v;
  std::memcpy(&v, p, 4);
  return _mm_cvtsi32_si128(static_cast<int>(v));
}

__attribute__((target("ssse3,popcnt"))) size_t pack_nonzero_bytes_ssse3(
    const uint32_t* in, size_t nblocks, unsigned first, unsigned last, uint64_t* masks,
    uint8_t* packed) {
  const unsigned nbytes = 4 * (last - first);
  const __m128i zero = _mm_setzero_si128();
  size_t count = 0;
  for (size_t b = 0; b < nblocks; ++b) {
    const auto* bytes = reinterpret_cast<const uint8_t*>(in + 32 * b + first);
    uint64_t mask = 0;
    for (unsigned i = 0; i < nbytes; i += 8) {
      const unsigned n = nbytes - i < 8 ? nbytes - i : 8;
      const __m128i v = load_bytes(bytes + i, n);
      // Bytes past n load as zero, so they are never marked.
      const auto nonzero =
          static_cast<unsigned>(~_mm_movemask_epi8(_mm_cmpeq_epi8(v, zero)) & 0xFF);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(packed + count),
                       _mm_shuffle_epi8(v, load_shuffle(kPackShuffles[nonzero])));
      count += static_cast<size_t>(__builtin_popcount(nonzero));
      mask |= uint64_t{nonzero} << i;
    }
    masks[b] = mask;
  }
  return count;
}

__attribute__((target("ssse3,popcnt"))) void unpack_nonzero_bytes_ssse3(
    const uint64_t* masks, const uint8_t* packed, size_t nblocks, unsigned first, unsigned last,
    uint32_t* out) {
  const unsigned nbytes = 4 * (last - first);
  size_t count = 0;
  for (size_t b = 0; b < nblocks; ++b) {
    auto* bytes = reinterpret_cast<uint8_t*>(out + 32 * b + first);
    const uint64_t mask = masks[b];
    for (unsigned i = 0; i < nbytes; i += 8) {
      const unsigned n = nbytes - i < 8 ? nbytes - i : 8;
      const auto nonzero = static_cast<unsigned>((mask >> i) & 0xFF);
      const __m128i v =
          _mm_shuffle_epi8(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(packed + count)),
                           load_shuffle(kUnpackShuffles[nonzero]));
      if (n == 8) {
        _mm_storel_epi64(reinterpret_cast<__m128i*>(bytes + i), v);
      } else {
        const auto word = static_cast<uint32_t>(_mm_cvtsi128_si32(v));
        std::memcpy(bytes + i, &word, 4);
      }
      count += static_cast<size_t>(__builtin_popcount(nonzero));
    }
  }
}
#endif

}  // namespace

size_t pack_nonzero_bytes(const uint32_t* in, size_t nblocks, unsigned first, unsigned last,
                          uint64_t* masks, uint8_t* packed, SimdLevel level) {
#ifdef CMPI_HAVE_X86_VARIANTS
  if (level != SimdLevel::kScalar)
    return pack_nonzero_bytes_ssse3(in, nblocks, first, last, masks, packed);
#endif
  return pack_nonzero_bytes_scalar(in, nblocks, first, last, masks, packed);
}

void unpack_nonzero_bytes(const uint64_t* masks, const uint8_t* packed, size_t nblocks,
                          unsigned first, unsigned last, uint32_t* out, SimdLevel level) {
#ifdef CMPI_HAVE_X86_VARIANTS
  if (level != SimdLevel::kScalar)
    return unpack_nonzero_bytes_ssse3(masks, packed, nblocks, first, last, out);
#endif
  unpack_nonzero_bytes_scalar(masks, packed, nblocks, first, last, out);
}

}  // namespace cmpi::compress
