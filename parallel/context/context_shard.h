// Which positions of every sequence a context-parallel rank holds.
//
// Causal attention gives late positions more work than early ones (a query
// attends to every key before it), so cutting a sequence into N contiguous
// parts would leave the last rank with most of it. Instead the sequence of
// T positions is cut into 2N chunks of T / 2N, and rank i holds chunks i
// and 2N-1-i: an early and a late chunk, the same causal work on every rank
// (the balanced layout Megatron-LM's context parallelism uses). The rank's
// local sequence is the two chunks one after the other, [B, T/N, ...].
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace cmpi::comm {
class Communicator;
}

namespace cmpi::parallel {

class ContextShard {
 public:
  // rank in [0, size); seq_len divisible by 2 * size (else
  // std::invalid_argument naming model.seq_len and parallel.context).
  ContextShard(int64_t seq_len, int size, int rank);

  int size() const { return size_; }
  int rank() const { return rank_; }
  int64_t seq_len() const { return seq_len_; }
  int64_t chunk() const { return seq_len_ / (2 * size_); }
  int64_t local_len() const { return 2 * chunk(); }
  // Global index of the chunk at `slot` (0: the early one, 1: the late one)
  // of `rank` (default: this rank).
  int64_t chunk_index(int slot, int rank) const;
  int64_t chunk_index(int slot) const { return chunk_index(slot, rank_); }
  // The global position of the first element of slot's chunk.
  int64_t first_position(int slot) const { return chunk_index(slot) * chunk(); }
  // The global positions of this rank's local sequence, [T/N] int64.
  torch::Tensor positions() const;
  // This rank's part of x [B, T, ...] (a whole sequence along dim 1):
  // [B, T/N, ...], its two chunks concatenated.
  torch::Tensor take(const torch::Tensor& x) const;

 private:
  int64_t seq_len_;
  int size_;
  int rank_;
};

// The context group and this rank's shard, for the layers that see the
// sequence (embedding, attention, loss). Both null without context
// parallelism (a cp group of one).
struct ContextGroup {
  comm::Communicator* cp = nullptr;
  const ContextShard* shard = nullptr;
  bool active() const { return cp != nullptr && shard != nullptr; }
};

}  // namespace cmpi::parallel
