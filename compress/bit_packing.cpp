// Groups of 64 values go through width-specialised kernels (one template
// instance per width, chosen through a table); the remaining < 64 values go
// through a generic 64-bit accumulator loop that produces the same stream.
#include "compress/bit_packing.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "bit_packing stores 64-bit words as little-endian stream bytes");

namespace cmpi::compress {
namespace {

constexpr size_t kGroup = 64;

constexpr uint64_t low_mask(unsigned width) {
  return width >= 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
}

template <unsigned W>
void pack_groups(const uint32_t* values, size_t groups, uint8_t* out) {
  if constexpr (W == 0) {
    return;
  } else if constexpr (W == 8) {
    // Whole bytes: a narrowing copy through a local buffer (no aliasing, a
    // fixed trip count), which the compiler vectorises.
    for (size_t g = 0; g < groups; ++g) {
      uint8_t bytes[kGroup];
      for (size_t j = 0; j < kGroup; ++j) bytes[j] = uint8_t(values[g * kGroup + j]);
      std::memcpy(out + g * kGroup, bytes, kGroup);
    }
  } else {
    for (size_t g = 0; g < groups; ++g) {
      const uint32_t* v = values + g * kGroup;
      uint64_t words[W] = {};
#pragma GCC unroll 64
      for (unsigned j = 0; j < kGroup; ++j) {
        const unsigned bit = j * W;
        const unsigned word = bit / 64;
        const unsigned shift = bit % 64;
        const uint64_t x = v[j] & low_mask(W);
        words[word] |= x << shift;
        if (shift + W > 64) words[word + 1] |= x >> (64 - shift);
      }
      std::memcpy(out + g * 8 * W, words, 8 * W);
    }
  }
}

template <unsigned W>
void unpack_groups(const uint8_t* in, size_t groups, uint32_t* values) {
  if constexpr (W == 0) {
    // fill_n, not memset: an empty output may be a null pointer, which
    // memset must not get even for 0 bytes.
    std::fill_n(values, groups * kGroup, 0u);
  } else if constexpr (W == 8) {
    for (size_t g = 0; g < groups; ++g) {
      uint8_t bytes[kGroup];
      std::memcpy(bytes, in + g * kGroup, kGroup);
      uint32_t wide[kGroup];
      for (size_t j = 0; j < kGroup; ++j) wide[j] = bytes[j];
      std::memcpy(values + g * kGroup, wide, sizeof(wide));
    }
  } else {
    for (size_t g = 0; g < groups; ++g) {
      uint32_t* v = values + g * kGroup;
      uint64_t words[W];
      std::memcpy(words, in + g * 8 * W, 8 * W);
#pragma GCC unroll 64
      for (unsigned j = 0; j < kGroup; ++j) {
        const unsigned bit = j * W;
        const unsigned word = bit / 64;
        const unsigned shift = bit % 64;
        uint64_t x = words[word] >> shift;
        if (shift + W > 64) x |= words[word + 1] << (64 - shift);
        v[j] = uint32_t(x & low_mask(W));
      }
    }
  }
}

using PackGroupsFn = void (*)(const uint32_t*, size_t, uint8_t*);
using UnpackGroupsFn = void (*)(const uint8_t*, size_t, uint32_t*);

template <size_t... Ws>
constexpr std::array<PackGroupsFn, sizeof...(Ws)> pack_table(std::index_sequence<Ws...>) {
  return {&pack_groups<unsigned(Ws)>...};
}
template <size_t... Ws>
constexpr std::array<UnpackGroupsFn, sizeof...(Ws)> unpack_table(std::index_sequence<Ws...>) {
  return {&unpack_groups<unsigned(Ws)>...};
}

// Stream tail: same layout as the group kernels, one value at a time.
void pack_tail(const uint32_t* values, size_t count, unsigned width, uint8_t* out) {
  uint64_t acc = 0;
  unsigned fill = 0;  // bits of acc in use, always < 64 between values
  for (size_t i = 0; i < count; ++i) {
    const uint64_t x = values[i] & low_mask(width);
    acc |= x << fill;
    fill += width;
    if (fill >= 64) {
      std::memcpy(out, &acc, 8);
      out += 8;
      fill -= 64;
      acc = fill ? x >> (width - fill) : 0;
    }
  }
  for (unsigned b = 0; b < fill; b += 8) *out++ = uint8_t(acc >> b);
}

void unpack_tail(const uint8_t* in, size_t count, unsigned width, uint32_t* values) {
  uint64_t acc = 0;
  unsigned avail = 0;  // at most width + 7 <= 39 bits
  for (size_t i = 0; i < count; ++i) {
    while (avail < width) {
      acc |= uint64_t(*in++) << avail;
      avail += 8;
    }
    values[i] = uint32_t(acc & low_mask(width));
    acc >>= width;
    avail -= width;
  }
}

void check_width(unsigned width) {
  if (width > kMaxPackWidth)
    throw std::invalid_argument("bit packing: width " + std::to_string(width) + " exceeds " +
                                std::to_string(kMaxPackWidth));
}

}  // namespace

unsigned bit_width_of(uint64_t max_value) {
  return max_value == 0 ? 0 : 64u - unsigned(__builtin_clzll(max_value));
}

void pack_bits(const uint32_t* values, size_t count, unsigned width, uint8_t* out) {
  check_width(width);
  static constexpr auto kTable = pack_table(std::make_index_sequence<kMaxPackWidth + 1>{});
  const size_t groups = count / kGroup;
  kTable[width](values, groups, out);
  pack_tail(values + groups * kGroup, count - groups * kGroup, width,
            out + groups * 8 * size_t(width));
}

void unpack_bits(const uint8_t* in, size_t count, unsigned width, uint32_t* out) {
  check_width(width);
  static constexpr auto kTable = unpack_table(std::make_index_sequence<kMaxPackWidth + 1>{});
  const size_t groups = count / kGroup;
  kTable[width](in, groups, out);
  unpack_tail(in + groups * 8 * size_t(width), count - groups * kGroup, width,
              out + groups * kGroup);
}

bool packed_padding_is_zero(const uint8_t* in, size_t count, unsigned width) {
  const size_t bits = count * width;
  if (bits % 8 == 0) return true;
  return (in[bits / 8] >> (bits % 8)) == 0;
}

}  // namespace cmpi::compress
