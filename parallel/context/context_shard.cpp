#include "parallel/context/context_shard.h"

#include <stdexcept>
#include <string>

namespace cmpi::parallel {

ContextShard::ContextShard(int64_t seq_len, int size, int rank)
    : seq_len_(seq_len), size_(size), rank_(rank) {
  if (size < 1 || rank < 0 || rank >= size)
    throw std::invalid_argument("context shard: rank " + std::to_string(rank) +
                                " outside a context group of " + std::to_string(size));
  if (seq_len <= 0 || seq_len % (2 * size) != 0)
    throw std::invalid_argument("model.seq_len (" + std::to_string(seq_len) +
                                ") is not divisible by 2 x parallel.context (" +
                                std::to_string(2 * size) + ")");
}

int64_t ContextShard::chunk_index(int slot, int rank) const {
  return slot == 0 ? rank : 2 * int64_t(size_) - 1 - rank;
}

torch::Tensor ContextShard::positions() const {
  const int64_t c = chunk();
  return torch::cat({torch::arange(first_position(0), first_position(0) + c, torch::kLong),
                     torch::arange(first_position(1), first_position(1) + c, torch::kLong)});
}

torch::Tensor ContextShard::take(const torch::Tensor& x) const {
  if (x.dim() < 2 || x.size(1) != seq_len_)
    throw std::invalid_argument("context shard: expects [batch, " + std::to_string(seq_len_) +
                                ", ...], got " + c10::str(x.sizes()));
  const int64_t c = chunk();
  return torch::cat({x.narrow(1, first_position(0), c), x.narrow(1, first_position(1), c)}, 1);
}

}  // namespace cmpi::parallel
