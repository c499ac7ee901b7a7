// KvCache: the keys and values of the positions a model has already seen,
// one pair of tensors per transformer block, for inference only
// (generation: generate/). A decoder's key and value at a position depend
// only on the positions up to it, so once computed they never change: each
// new token then needs only its own forward (one position through every
// block) attending over the cached keys and values, instead of the whole
// prefix again. The training path never touches a cache.
//
// Stored per block: [batch, kv heads of this rank, capacity, head_dim], the
// keys after the rotary turn (they are turned by their own positions, which
// the later queries' relative angles need), before grouped-query attention
// repeats them for the query heads of their group (the cache keeps kv_heads,
// not heads: GQA's memory saving). Room for `capacity` positions is held
// from the start (model.seq_len), so appending copies only the new
// positions.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace cmpi::models {

class KvCache {
 public:
  // Throws std::invalid_argument for a non-positive size.
  KvCache(int64_t layers, int64_t batch, int64_t kv_heads, int64_t capacity, int64_t head_dim,
          torch::ScalarType dtype);

  // Positions held by every block (the next token's position).
  int64_t length() const { return length_; }
  int64_t capacity() const { return capacity_; }
  int64_t batch() const { return batch_; }
  int64_t layers() const { return int64_t(keys_.size()); }

  // Block `layer`'s keys and values of positions [0, length() + T): the
  // cached ones followed by `keys` and `values` [batch, kv heads, T,
  // head_dim], which are copied into the cache. Throws std::out_of_range
  // when length() + T exceeds the capacity, std::invalid_argument for a
  // shape that does not fit. The new positions count as held only after
  // advance(T), once every block has appended them.
  std::pair<torch::Tensor, torch::Tensor> append(int64_t layer, const torch::Tensor& keys,
                                                 const torch::Tensor& values);
  void advance(int64_t positions);
  // Forgets every position (a new sequence); keeps the memory.
  void clear() { length_ = 0; }

 private:
  int64_t batch_, capacity_;
  int64_t length_ = 0;
  std::vector<torch::Tensor> keys_, values_;  // per block: [B, kv heads, capacity, head_dim]
};

}  // namespace cmpi::models
