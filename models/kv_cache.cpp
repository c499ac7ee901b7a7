#include "models/kv_cache.h"

#include <stdexcept>
#include <string>

namespace cmpi::models {

KvCache::KvCache(int64_t layers, int64_t batch, int64_t kv_heads, int64_t capacity,
                 int64_t head_dim, torch::ScalarType dtype)
    : batch_(batch), capacity_(capacity) {
  if (layers < 0 || batch <= 0 || kv_heads <= 0 || capacity <= 0 || head_dim <= 0)
    throw std::invalid_argument(
        "KV cache: sizes must be positive (layers " + std::to_string(layers) + ", batch " +
        std::to_string(batch) + ", kv heads " + std::to_string(kv_heads) + ", capacity " +
        std::to_string(capacity) + ", head_dim " + std::to_string(head_dim) + ")");
  const auto options = torch::TensorOptions().dtype(dtype);
  for (int64_t i = 0; i < layers; ++i) {
    keys_.push_back(torch::zeros({batch, kv_heads, capacity, head_dim}, options));
    values_.push_back(torch::zeros({batch, kv_heads, capacity, head_dim}, options));
  }
}

std::pair<torch::Tensor, torch::Tensor> KvCache::append(int64_t layer, const torch::Tensor& keys,
                                                        const torch::Tensor& values) {
  if (layer < 0 || layer >= layers())
    throw std::invalid_argument("KV cache: no block " + std::to_string(layer) + " of " +
                                std::to_string(layers()));
  auto& stored_keys = keys_[size_t(layer)];
  auto& stored_values = values_[size_t(layer)];
  const int64_t time = keys.size(2);
  if (keys.dim() != 4 || keys.sizes() != values.sizes() || keys.size(0) != batch_ ||
      keys.size(1) != stored_keys.size(1) || keys.size(3) != stored_keys.size(3))
    throw std::invalid_argument("KV cache: keys " + c10::str(keys.sizes()) + " and values " +
                                c10::str(values.sizes()) + " do not fit the cache's " +
                                c10::str(stored_keys.sizes()));
  if (length_ + time > capacity_)
    throw std::out_of_range("KV cache: positions up to " + std::to_string(length_ + time) +
                            " exceed its capacity of " + std::to_string(capacity_));
  stored_keys.narrow(2, length_, time).copy_(keys);
  stored_values.narrow(2, length_, time).copy_(values);
  return {stored_keys.narrow(2, 0, length_ + time), stored_values.narrow(2, 0, length_ + time)};
}

void KvCache::advance(int64_t positions) {
  if (positions < 0 || length_ + positions > capacity_)
    throw std::out_of_range("KV cache: advancing " + std::to_string(positions) + " from " +
                            std::to_string(length_) + " exceeds its capacity of " +
                            std::to_string(capacity_));
  length_ += positions;
}

}  // namespace cmpi::models
