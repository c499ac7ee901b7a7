// The MPC transform of one chunk (after Yang, Mukka, Hesaaraki, Burtscher,
// "MPC: A Massively Parallel Compression Algorithm for Scientific Data",
// IEEE Cluster 2015; the float pipeline LNV{dim}s BIT LNV1s ZE):
//
//   1. LNV{dim}s  d1[i] = w[i] - w[i - dim] (mod 2^32) over the chunk's 32-bit
//                 words w, w taken as 0 before the chunk starts;
//   2. BIT        d1 is cut into blocks of 32 words (the last block of the
//                 chunk zero-padded) and each block is bit-transposed: word i
//                 of a block collects bit i of its 32 words (bit_transpose.h);
//   3. LNV1s      inside each block, d2[j] = t[j] - t[j - 1] for j >= 1 and
//                 d2[0] = t[0]: a lag-1 difference of neighbouring bit planes,
//                 so runs of equal planes (sign extension) turn into zeros;
//   4. ZE         per block a 32-bit bitmap of the nonzero words of d2, then
//                 those words (zero_word_elimination.h).
//
// Chunk format (little-endian u32 words), B = ceil(words / 32) blocks:
//   compressed: bitmap[0..B) then the nonzero words of all blocks in order;
//               its size is 4 * (B + nonzero) bytes and always < 4 * words.
//   raw:        exactly 4 * words bytes, the words as they are; chosen when
//               the compressed form would not be smaller.
// The size alone tells the forms apart. A decoder checks the size, that the
// bitmaps account for exactly the words present, and that the padding of the
// last block decodes to zero, so each chunk has exactly one valid encoding.
//
// The stages run over batches of kBatchBlocks blocks held in L1-sized scratch
// buffers, one pass per stage, each pass a SIMD loop.
#include "compress/mpc_chunk.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "compress/bit_transpose.h"
#include "compress/payload.h"
#include "compress/word_differencing.h"
#include "compress/zero_word_elimination.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the mpc chunk format stores words in host order, defined as little-endian");

namespace cmpi::compress {
namespace {

constexpr size_t kBatchBlocks = 64;
constexpr size_t kBatchWords = kBatchBlocks * kTransposeBlockWords;

size_t blocks_of(size_t words) {
  return (words + 31) / 32;
}

size_t popcount_sum(const uint32_t* bitmaps, size_t n) {
  size_t sum = 0;
  for (size_t i = 0; i < n; ++i) sum += static_cast<size_t>(__builtin_popcount(bitmaps[i]));
  return sum;
}

[[noreturn]] void fail(size_t chunk_index, const std::string& what) {
  throw DecodeError("body", "mpc chunk " + std::to_string(chunk_index) + ": " + what);
}

}  // namespace

size_t mpc_encode_chunk(const float* in, size_t words, unsigned dim, uint8_t* out,
                        SimdLevel level) {
  const auto* w = reinterpret_cast<const AliasedWord*>(in);
  const size_t nblocks = blocks_of(words);
  // The compressed form must stay below raw size: fewer than this many words.
  const size_t word_budget = words - nblocks;
  uint8_t* const packed_out = out + 4 * nblocks;

  alignas(32) uint32_t stage_a[kBatchWords];
  alignas(32) uint32_t stage_b[kBatchWords];
  alignas(32) uint32_t bitmaps[kBatchBlocks];
  alignas(32) uint8_t packed[4 * (kBatchWords + kZeroPackSlackWords)];

  size_t nonzero = 0;
  for (size_t block0 = 0; block0 < nblocks; block0 += kBatchBlocks) {
    const size_t nb = std::min(kBatchBlocks, nblocks - block0);
    const size_t begin = 32 * block0;
    const size_t end = std::min(words, begin + 32 * nb);
    difference_at_stride(w, begin, end, dim, stage_a, level);
    std::fill(stage_a + (end - begin), stage_a + 32 * nb, 0u);
    bit_transpose_32x32(stage_a, stage_b, nb, level);
    difference_within_blocks(stage_b, nb, stage_a, level);
    // Pack straight into the output when even an incompressible batch plus
    // the packing slack stays inside the chunk's raw-size region.
    const bool direct = nonzero + 32 * nb + kZeroPackSlackWords <= word_budget;
    uint8_t* const destination = direct ? packed_out + 4 * nonzero : packed;
    const size_t count = pack_nonzero_words(stage_a, nb, bitmaps, destination, level);
    if (nonzero + count >= word_budget) {
      std::memcpy(out, in, 4 * words);
      return 4 * words;
    }
    std::memcpy(out + 4 * block0, bitmaps, 4 * nb);
    if (!direct) std::memcpy(packed_out + 4 * nonzero, packed, 4 * count);
    nonzero += count;
  }
  return 4 * (nblocks + nonzero);
}

void mpc_decode_chunk(const uint8_t* in, size_t size, float* out, size_t words, unsigned dim,
                      size_t chunk_index, SimdLevel level) {
  if (size == 4 * words) {
    std::memcpy(out, in, size);
    return;
  }
  const size_t nblocks = blocks_of(words);
  if (size > 4 * words)
    fail(chunk_index,
         std::to_string(size) + " bytes for " + std::to_string(words) + " words, more than raw");
  if (size < 4 * nblocks || size % 4 != 0)
    fail(chunk_index, std::to_string(size) + " bytes cannot hold " + std::to_string(nblocks) +
                          " block bitmaps plus whole words");
  const size_t packed_words = size / 4 - nblocks;

  alignas(32) uint32_t bitmaps[kBatchBlocks];
  alignas(32) uint32_t stage_a[kBatchWords];
  alignas(32) uint32_t stage_b[kBatchWords];
  alignas(32) uint8_t packed_tail[4 * (kBatchWords + kZeroPackSlackWords)];

  size_t claimed = 0;
  for (size_t block0 = 0; block0 < nblocks; block0 += kBatchBlocks) {
    const size_t nb = std::min(kBatchBlocks, nblocks - block0);
    std::memcpy(bitmaps, in + 4 * block0, 4 * nb);
    claimed += popcount_sum(bitmaps, nb);
  }
  if (claimed != packed_words)
    fail(chunk_index, "bitmaps mark " + std::to_string(claimed) + " nonzero words, chunk holds " +
                          std::to_string(packed_words));

  auto* w = reinterpret_cast<AliasedWord*>(out);
  const uint8_t* packed = in + 4 * nblocks;
  size_t consumed = 0;
  for (size_t block0 = 0; block0 < nblocks; block0 += kBatchBlocks) {
    const size_t nb = std::min(kBatchBlocks, nblocks - block0);
    const size_t begin = 32 * block0;
    const size_t end = std::min(words, begin + 32 * nb);
    std::memcpy(bitmaps, in + 4 * block0, 4 * nb);
    const size_t count = popcount_sum(bitmaps, nb);
    const uint8_t* source = packed + 4 * consumed;
    if (consumed + count + kZeroPackSlackWords > packed_words) {
      // Near the end of the chunk: unpacking over-reads, so work on a copy.
      std::memcpy(packed_tail, source, 4 * count);
      std::memset(packed_tail + 4 * count, 0, 4 * kZeroPackSlackWords);
      source = packed_tail;
    }
    unpack_nonzero_words(bitmaps, source, nb, stage_a, level);
    consumed += count;
    undo_difference_within_blocks(stage_a, nb, level);
    bit_transpose_32x32(stage_a, stage_b, nb, level);
    for (size_t i = end - begin; i < 32 * nb; ++i)
      if (stage_b[i] != 0) fail(chunk_index, "padding of the last block decodes to nonzero words");
    undo_difference_at_stride(stage_b, begin, end, dim, w, level);
  }
}

}  // namespace cmpi::compress
