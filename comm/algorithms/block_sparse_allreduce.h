// Block-sparse allreduce (comm/algorithms/block_sparse_allreduce.cpp): an
// exact sum that moves only the blocks of `block` floats holding a non-zero
// bit pattern, with their block numbers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "comm/algorithms/compressed_context.h"

namespace cmpi::comm {

// How a buffer of n floats is cut: blocks of `block` floats (the last one
// shorter), dealt to `ranks` ring segments of near-equal block counts;
// segment j is blocks [segment_first_block[j], segment_first_block[j+1]).
struct BlockLayout {
  size_t n = 0, block = 1, blocks = 0;
  std::vector<size_t> segment_first_block;  // ranks + 1 entries
};
BlockLayout block_layout(size_t n, size_t block, int ranks);

// marks[b] = 1 when block b of data[0..n) holds a non-zero bit pattern, else
// 0 (marks is resized to the block count); returns how many are marked. One
// pass over the data: the cheap density measure behind `select: auto`.
size_t mark_nonzero_blocks(const float* data, size_t n, size_t block, std::vector<uint8_t>& marks);

// data[0..n) = sum over the ranks of ctx, in place. nonzero_marks: this
// rank's marks from mark_nonzero_blocks(data, n, block, ...). Uses ctx.comm,
// ctx.tag, ctx.chunk_elems (rounded down to whole blocks, at least one) and
// charges ctx.counters; ctx.codec is not used. Every rank must pass the same
// n, block and chunk_elems. The summation order is fixed (see the .cpp).
void block_sparse_allreduce(CompressedContext& ctx, float* data, size_t n, size_t block,
                            const std::vector<uint8_t>& nonzero_marks);

}  // namespace cmpi::comm
