// The MPC transform of one chunk (after Yang, Mukka, Hesaaraki, Burtscher,
// "MPC: A Massively Parallel Compression Algorithm for Scientific Data",
// IEEE Cluster 2015; the float pipeline LNV{dim}s BIT LNV1s ZE), with the
// choices each stage leaves open made per chunk (mpc_chunk_plan.h):
//
//   1. LNV{s}s  d1[i] = (w[i] - w[i - s]) ^ R (mod 2^32) over the chunk's
//               32-bit words w, w taken as 0 before the chunk starts. s is the
//               stride (1..32), or 0 for no differencing: d1 = rotl(w, 1) ^ R,
//               for data whose neighbours do not predict each other (gradients,
//               activations); the rotation moves a float's sign (noise there)
//               below its mantissa, so that the exponent bits are the top
//               planes. R is the bitwise majority of the chunk's d1 words
//               (estimated on a sample), so that every bit plane below is
//               mostly zero; plain MPC: R = 0;
//   2. BIT      d1 is cut into blocks of 32 words (the last block of the
//               chunk zero-padded) and each block is bit-transposed: word j
//               of a block (plane j) collects bit j of its 32 words;
//   3. LNV1s    inside each block, d2[j] = t[j] - t[j - 1] for the planes
//               j >= c, d2[j] = t[j] below: neighbouring planes that are
//               equal (sign extension, exponent bits that flip together) turn
//               into zeros; plain MPC: c = 1;
//   4. ZE       planes [0, a) are stored whole: they are nearly never zero
//               (mantissa bits), so a bitmap bit would only cost. Planes
//               [a, b) are zero-eliminated per byte (4 mask bits per plane
//               and block, then the nonzero bytes): mostly-zero planes whose
//               words are rarely zero as a whole (low exponent bits). Planes
//               [b, 32) are zero-eliminated per word (a bitmap bit per plane
//               and block, then the nonzero words), except that the planes
//               above the last one with a nonzero word in a group of 64
//               blocks get no bitmap bits in that group. Plain MPC: a = b = 0.
//
// Why: plain MPC spends a 32-bit bitmap on every 32 values, 1 bit per value.
// On smooth data it pays for itself many times; on noise-like data, where
// only the exponent planes have zeros, it costs as much as it saves (plain
// MPC keeps ~29 of 32 bits of the captured activations, Blosc's
// LZ4+bitshuffle ~27.9). Storing the mantissa planes whole, eliminating the
// low exponent planes per byte and dropping the bitmap bits of planes that
// are zero throughout a group brings such data to ~27.6 bits, while smooth
// data keeps a plan close to plain MPC (a small a and b, c = 1).
//
// Chunk format (little-endian):
//   raw:        exactly 4 * words bytes, the words as they are; chosen when
//               the compressed form would not be smaller.
//   compressed: fewer than 4 * words bytes: the 8-byte plan (u8 s, u8 c,
//               u8 a, u8 b, u32 R), then per group of 64 blocks (the last
//               group shorter):
//                 top       u8 in b..32: one past the last plane >= b with a
//                           nonzero word in the group (b if none);
//                 presence  ceil(blocks * m / 8) bytes, m = (top - b) +
//                           4 * (b - a) bits per block, LSB first: bit j - b
//                           for the planes b <= j < top that are nonzero
//                           words, then bit 4 * (j - a) + k for the nonzero
//                           bytes k of the planes a <= j < b; unused bits of
//                           the last byte 0;
//                 words     the planes < a and the nonzero planes >= b of
//                           each block, in block and plane order, u32 each;
//                 bytes     the nonzero bytes of planes [a, b), in block,
//                           plane and byte order.
// The size alone tells the forms apart. A decoder checks the plan's fields
// and each group's top, that every group's presence, words and bytes fit in
// the chunk and that the groups fill it exactly, and that the padding of the
// last block decodes to zero.
//
// The stages run over one group at a time in L1-sized scratch buffers, one
// pass per stage, each pass a SIMD loop except the presence bits.
#include "compress/mpc_chunk.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "compress/bit_transpose.h"
#include "compress/payload.h"
#include "compress/word_differencing.h"
#include "compress/zero_byte_elimination.h"
#include "compress/zero_word_elimination.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the mpc chunk format stores words in host order, defined as little-endian");

namespace cmpi::compress {
namespace {

constexpr size_t kGroupBlocks = 64;
constexpr size_t kGroupWords = kGroupBlocks * kTransposeBlockWords;
// Presence of one group: at most 62 bits per block, plus slack for the
// 8-byte stores of the writer and the 16-byte reads of the reader.
constexpr size_t kPresenceBufferBytes = kGroupBlocks * 64 / 8 + 16;
constexpr size_t kByteBufferBytes = kGroupBlocks * 4 * kMaxBytePlanes + kZeroByteSlack;

size_t blocks_of(size_t words) {
  return (words + 31) / 32;
}

uint32_t low_planes(unsigned count) {
  return count >= 32 ? ~0u : (1u << count) - 1;
}

uint64_t load_u64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// The presence fields of nb blocks, m = word_bits + byte_bits <= 62 bits
// each (the word bits of bitmaps[k] above first_word_plane, then
// byte_masks[k]), packed LSB first into out, which has room for the bytes
// rounded up to whole u64s plus 8. Returns the bytes used.
size_t write_presence(const uint32_t* bitmaps, const uint64_t* byte_masks, size_t nb,
                      unsigned first_word_plane, unsigned word_bits, unsigned byte_bits,
                      uint8_t* out) {
  const unsigned m = word_bits + byte_bits;
  if (m == 32 && word_bits == 32) {  // plain MPC: the bitmaps as they are
    std::memcpy(out, bitmaps, 4 * nb);
    return 4 * nb;
  }
  uint8_t* const start = out;
  uint64_t pending = 0;
  unsigned pending_bits = 0;
  for (size_t k = 0; k < nb; ++k) {
    const uint64_t field =
        (word_bits ? uint64_t{bitmaps[k] >> first_word_plane} : 0u) | (byte_masks[k] << word_bits);
    pending |= field << pending_bits;
    if (pending_bits + m >= 64) {
      std::memcpy(out, &pending, 8);
      out += 8;
      // pending_bits > 0 here, as m < 64; the field's bits that did not fit.
      pending = field >> (64 - pending_bits);
      pending_bits = pending_bits + m - 64;
    } else {
      pending_bits += m;
    }
  }
  std::memcpy(out, &pending, 8);
  return static_cast<size_t>(out - start) + (pending_bits + 7) / 8;
}

struct PresenceCounts {
  size_t words = 0;
  size_t bytes = 0;
};

// The inverse of write_presence, with the planes stored whole (`whole`) added
// to each bitmap; counts the words and bytes the blocks mark. in has 16
// readable bytes past the presence bytes.
__attribute__((always_inline)) inline PresenceCounts read_presence_inline(
    const uint8_t* in, size_t nb, uint32_t whole, unsigned first_word_plane, unsigned word_bits,
    unsigned byte_bits, uint32_t* bitmaps, uint64_t* byte_masks) {
  PresenceCounts counts;
  const unsigned m = word_bits + byte_bits;
  if (m == 32 && word_bits == 32) {
    std::memcpy(bitmaps, in, 4 * nb);
    for (size_t k = 0; k < nb; ++k) {
      byte_masks[k] = 0;
      counts.words += static_cast<size_t>(__builtin_popcount(bitmaps[k]));
    }
    return counts;
  }
  const uint64_t field_mask = (uint64_t{1} << m) - 1;
  const uint64_t word_mask = (uint64_t{1} << word_bits) - 1;
  size_t position = 0;
  for (size_t k = 0; k < nb; ++k, position += m) {
    const uint8_t* p = in + position / 8;
    const unsigned shift = position % 8;
    const uint64_t low = load_u64(p) >> shift;
    const uint64_t field = (shift ? low | (load_u64(p + 8) << (64 - shift)) : low) & field_mask;
    const uint64_t word_present = field & word_mask;
    bitmaps[k] = whole | static_cast<uint32_t>(word_present << first_word_plane);
    byte_masks[k] = field >> word_bits;
    counts.words += static_cast<size_t>(__builtin_popcount(bitmaps[k]));
    counts.bytes += static_cast<size_t>(__builtin_popcountll(byte_masks[k]));
  }
  return counts;
}

PresenceCounts read_presence_portable(const uint8_t* in, size_t nb, uint32_t whole,
                                      unsigned first_word_plane, unsigned word_bits,
                                      unsigned byte_bits, uint32_t* bitmaps, uint64_t* byte_masks) {
  return read_presence_inline(in, nb, whole, first_word_plane, word_bits, byte_bits, bitmaps,
                              byte_masks);
}

#if defined(__x86_64__) && defined(__GNUC__)
// The same with the popcnt instruction (every CPU with SSSE3 variants has it).
__attribute__((target("popcnt"))) PresenceCounts read_presence_popcnt(
    const uint8_t* in, size_t nb, uint32_t whole, unsigned first_word_plane, unsigned word_bits,
    unsigned byte_bits, uint32_t* bitmaps, uint64_t* byte_masks) {
  return read_presence_inline(in, nb, whole, first_word_plane, word_bits, byte_bits, bitmaps,
                              byte_masks);
}
#endif

PresenceCounts read_presence(const uint8_t* in, size_t nb, uint32_t whole,
                             unsigned first_word_plane, unsigned word_bits, unsigned byte_bits,
                             uint32_t* bitmaps, uint64_t* byte_masks, SimdLevel level) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (level != SimdLevel::kScalar)
    return read_presence_popcnt(in, nb, whole, first_word_plane, word_bits, byte_bits, bitmaps,
                                byte_masks);
#endif
  return read_presence_portable(in, nb, whole, first_word_plane, word_bits, byte_bits, bitmaps,
                                byte_masks);
}

// One past the highest plane >= first_word_plane with a nonzero word in any
// of the nb blocks at words (first_word_plane if there is none). Eight
// 4-word accumulators (GCC vector types) kept in registers.
unsigned top_of_word_planes(const uint32_t* words, size_t nb, unsigned first_word_plane) {
  using Word4 = uint32_t __attribute__((vector_size(16)));
  auto load = [](const uint32_t* p) {
    Word4 v;
    std::memcpy(&v, p, 16);
    return v;
  };
  Word4 a0 = {}, a1 = {}, a2 = {}, a3 = {}, a4 = {}, a5 = {}, a6 = {}, a7 = {};
  for (size_t b = 0; b < nb; ++b, words += 32) {
    a0 |= load(words);
    a1 |= load(words + 4);
    a2 |= load(words + 8);
    a3 |= load(words + 12);
    a4 |= load(words + 16);
    a5 |= load(words + 20);
    a6 |= load(words + 24);
    a7 |= load(words + 28);
  }
  uint32_t any[32];
  const Word4 all[8] = {a0, a1, a2, a3, a4, a5, a6, a7};
  std::memcpy(any, all, sizeof(any));
  unsigned top = first_word_plane;
  for (unsigned j = first_word_plane; j < 32; ++j)
    if (any[j] != 0) top = j + 1;
  return top;
}

[[noreturn]] void fail(size_t chunk_index, const std::string& what) {
  throw DecodeError("body", "mpc chunk " + std::to_string(chunk_index) + ": " + what);
}

size_t store_raw(const float* in, size_t words, uint8_t* out) {
  std::memcpy(out, in, 4 * words);
  return 4 * words;
}

}  // namespace

size_t mpc_encode_chunk(const float* in, size_t words, unsigned dim, uint8_t* out,
                        SimdLevel level) {
  if (4 * words <= kMpcPlanBytes) return store_raw(in, words, out);
  return mpc_encode_chunk_with_plan(in, words, choose_mpc_plan(in, words, dim, level), out, level);
}

size_t mpc_encode_chunk_with_plan(const float* in, size_t words, const MpcChunkPlan& plan,
                                  uint8_t* out, SimdLevel level) {
  const size_t raw_bytes = 4 * words;
  if (raw_bytes <= kMpcPlanBytes) return store_raw(in, words, out);
  const auto* w = reinterpret_cast<const AliasedWord*>(in);
  const size_t nblocks = blocks_of(words);
  const uint32_t whole = low_planes(plan.first_byte_plane);
  const uint32_t per_byte = low_planes(plan.first_word_plane) & ~whole;
  const unsigned byte_bits = 4 * (plan.first_word_plane - plan.first_byte_plane);

  alignas(32) uint32_t stage_a[kGroupWords];
  alignas(32) uint32_t stage_b[kGroupWords];
  alignas(32) uint32_t bitmaps[kGroupBlocks];
  uint64_t byte_masks[kGroupBlocks] = {};
  alignas(32) uint8_t packed[4 * (kGroupWords + kZeroPackSlackWords)];
  uint8_t bytes[kByteBufferBytes];
  uint8_t presence[kPresenceBufferBytes];

  write_mpc_plan(plan, out);
  size_t at = kMpcPlanBytes;
  for (size_t block0 = 0; block0 < nblocks; block0 += kGroupBlocks) {
    const size_t nb = std::min(kGroupBlocks, nblocks - block0);
    const size_t begin = 32 * block0;
    const size_t end = std::min(words, begin + 32 * nb);
    difference_at_stride(w, begin, end, plan.stride, plan.reference, stage_a, level);
    std::fill(stage_a + (end - begin), stage_a + 32 * nb, 0u);
    bit_transpose_32x32(stage_a, stage_b, nb, level);
    difference_within_blocks(stage_b, nb, plan.first_lagged, stage_a, level);

    // The word planes above the last one with a nonzero word in this group
    // get no presence bits.
    const unsigned top = top_of_word_planes(stage_a, nb, plan.first_word_plane);
    const unsigned word_bits = top - plan.first_word_plane;
    const size_t presence_bytes = 1 + (nb * (word_bits + byte_bits) + 7) / 8;
    if (at + presence_bytes >= raw_bytes) return store_raw(in, words, out);
    // Pack the words straight into the output when even an incompressible
    // group plus the packing slack stays inside the chunk's raw-size region.
    const size_t words_at = at + presence_bytes;
    const bool direct = words_at + 4 * (32 * nb + kZeroPackSlackWords) <= raw_bytes;
    uint8_t* const words_out = direct ? out + words_at : packed;
    const size_t count =
        pack_nonzero_words(stage_a, nb, whole, per_byte, bitmaps, words_out, level);
    const size_t byte_count =
        byte_bits ? pack_nonzero_bytes(stage_a, nb, plan.first_byte_plane, plan.first_word_plane,
                                       byte_masks, bytes, level)
                  : 0;
    const size_t group_end = words_at + 4 * count + byte_count;
    if (group_end >= raw_bytes) return store_raw(in, words, out);

    out[at] = static_cast<uint8_t>(top);
    write_presence(bitmaps, byte_masks, nb, plan.first_word_plane, word_bits, byte_bits, presence);
    std::memcpy(out + at + 1, presence, presence_bytes - 1);
    if (!direct) std::memcpy(out + words_at, packed, 4 * count);
    std::memcpy(out + words_at + 4 * count, bytes, byte_count);
    at = group_end;
  }
  return at;
}

void mpc_decode_chunk(const uint8_t* in, size_t size, float* out, size_t words, size_t chunk_index,
                      SimdLevel level) {
  if (size == 4 * words) {
    std::memcpy(out, in, size);
    return;
  }
  if (size > 4 * words)
    fail(chunk_index,
         std::to_string(size) + " bytes for " + std::to_string(words) + " words, more than raw");
  if (size < kMpcPlanBytes)
    fail(chunk_index, std::to_string(size) + " bytes cannot hold its " +
                          std::to_string(kMpcPlanBytes) + "-byte plan");
  const MpcChunkPlan plan = read_mpc_plan(in);
  const std::string problem = mpc_plan_problem(plan);
  if (!problem.empty()) fail(chunk_index, "plan: " + problem);

  const size_t nblocks = blocks_of(words);
  const uint32_t whole = low_planes(plan.first_byte_plane);
  const unsigned byte_bits = 4 * (plan.first_word_plane - plan.first_byte_plane);

  alignas(32) uint32_t bitmaps[kGroupBlocks];
  uint64_t byte_masks[kGroupBlocks];
  alignas(32) uint32_t stage_a[kGroupWords];
  alignas(32) uint32_t stage_b[kGroupWords];
  alignas(32) uint8_t packed_tail[4 * (kGroupWords + kZeroPackSlackWords)];
  uint8_t bytes[kByteBufferBytes];
  uint8_t presence[kPresenceBufferBytes];

  auto* w = reinterpret_cast<AliasedWord*>(out);
  size_t at = kMpcPlanBytes;
  for (size_t block0 = 0; block0 < nblocks; block0 += kGroupBlocks) {
    const size_t nb = std::min(kGroupBlocks, nblocks - block0);
    const size_t begin = 32 * block0;
    const size_t end = std::min(words, begin + 32 * nb);
    auto blocks_named = [&] {
      return "blocks " + std::to_string(block0) + ".." + std::to_string(block0 + nb - 1);
    };

    if (at >= size) fail(chunk_index, "ends before " + blocks_named());
    const unsigned top = in[at++];
    if (top < plan.first_word_plane || top > 32)
      fail(chunk_index, "top word plane " + std::to_string(top) + " of " + blocks_named() +
                            " is outside " + std::to_string(plan.first_word_plane) + "..32");
    const unsigned word_bits = top - plan.first_word_plane;
    const size_t presence_bits_total = nb * (word_bits + byte_bits);
    const size_t presence_bytes = (presence_bits_total + 7) / 8;
    if (presence_bytes > size - at)
      fail(chunk_index, "presence bits of " + blocks_named() + " run past the chunk's end");
    std::memcpy(presence, in + at, presence_bytes);
    std::memset(presence + presence_bytes, 0, 16);
    if (presence_bits_total % 8 != 0 &&
        (presence[presence_bytes - 1] >> (presence_bits_total % 8)) != 0)
      fail(chunk_index, "unused presence bits after " + blocks_named() + " are not zero");
    const PresenceCounts marked = read_presence(presence, nb, whole, plan.first_word_plane,
                                                word_bits, byte_bits, bitmaps, byte_masks, level);
    const size_t count = marked.words;
    const size_t byte_count = marked.bytes;
    const size_t words_at = at + presence_bytes;
    const size_t left = size - words_at;
    if (4 * count + byte_count > left)
      fail(chunk_index, blocks_named() + " mark " + std::to_string(count) + " words and " +
                            std::to_string(byte_count) + " bytes, " + std::to_string(left) +
                            " bytes are left");

    const uint8_t* source = in + words_at;
    if (4 * (count + kZeroPackSlackWords) > left) {
      // Near the end of the chunk: unpacking over-reads, so work on a copy.
      std::memcpy(packed_tail, source, 4 * count);
      std::memset(packed_tail + 4 * count, 0, 4 * kZeroPackSlackWords);
      source = packed_tail;
    }
    unpack_nonzero_words(bitmaps, source, nb, stage_a, level);
    if (byte_bits) {
      const uint8_t* byte_source = in + words_at + 4 * count;
      if (4 * count + byte_count + kZeroByteSlack > left) {
        std::memcpy(bytes, byte_source, byte_count);
        std::memset(bytes + byte_count, 0, kZeroByteSlack);
        byte_source = bytes;
      }
      unpack_nonzero_bytes(byte_masks, byte_source, nb, plan.first_byte_plane,
                           plan.first_word_plane, stage_a, level);
    }
    undo_difference_within_blocks(stage_a, nb, plan.first_lagged, level);
    bit_transpose_32x32(stage_a, stage_b, nb, level);
    for (size_t i = end - begin; i < 32 * nb; ++i)
      if (stage_b[i] != 0) fail(chunk_index, "padding of the last block decodes to nonzero words");
    undo_difference_at_stride(stage_b, begin, end, plan.stride, plan.reference, w, level);
    at = words_at + 4 * count + byte_count;
  }
  if (at != size)
    fail(chunk_index, std::to_string(size - at) + " bytes follow the last block's data");
}

}  // namespace cmpi::compress
