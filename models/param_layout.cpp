// The name hashes with 64-bit FNV-1a (stable across platforms and standard
// libraries, unlike std::hash) and mixes with the run seed by splitmix64.
// Element i of a normal parameter is counter_normal(seed, i) * std, where i
// indexes the FULL tensor: a rank maps each element of its tp slice back to
// its global index, so every slice and every sub-range of one is the same
// values as the single-rank tensor's, whatever generates them.
#include "models/param_layout.h"

#include <cmath>
#include <stdexcept>

#include "compress/splitmix64.h"

namespace cmpi::models {

using compress::splitmix64;

uint64_t parameter_seed(uint64_t run_seed, const std::string& name) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char c : name) hash = (hash ^ c) * 0x100000001b3ULL;
  return splitmix64(run_seed ^ splitmix64(hash));
}

float counter_normal(uint64_t seed, uint64_t index) {
  const uint64_t bits = splitmix64(seed ^ splitmix64(index));
  // u1 in (0, 1] keeps the logarithm finite; u2 in [0, 1).
  const double u1 = (double(bits >> 32) + 1.0) / 4294967296.0;
  const double u2 = double(bits & 0xffffffffULL) / 4294967296.0;
  return float(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

void initial_values(const ParamLayout& layout, const std::vector<int64_t>& local_shape,
                    uint64_t run_seed, int tp_rank, int tp_size, size_t offset, size_t length,
                    float* out) {
  if (layout.split_dim >= int64_t(local_shape.size()))
    throw std::logic_error("parameter " + layout.name + ": split dim " +
                           std::to_string(layout.split_dim) + " out of range");
  if (layout.init != ParamLayout::Init::kNormal) {
    const float value = layout.init == ParamLayout::Init::kOnes ? 1.0f : 0.0f;
    for (size_t i = 0; i < length; ++i) out[i] = value;
    return;
  }
  // Local element e = (outer, along, inner) around split_dim; its global
  // index has along + tp_rank * local_along in that dim.
  uint64_t inner = 1, along = 1;
  if (layout.split_dim >= 0) {
    along = uint64_t(local_shape[size_t(layout.split_dim)]);
    for (size_t d = size_t(layout.split_dim) + 1; d < local_shape.size(); ++d)
      inner *= uint64_t(local_shape[d]);
  }
  const uint64_t seed = parameter_seed(run_seed, layout.name);
  const uint64_t shift = layout.split_dim >= 0 ? uint64_t(tp_rank) * along : 0;
  const uint64_t global_along = layout.split_dim >= 0 ? along * uint64_t(tp_size) : along;
  for (size_t i = 0; i < length; ++i) {
    const uint64_t e = uint64_t(offset + i);
    uint64_t global = e;
    if (layout.split_dim >= 0) {
      const uint64_t in = e % inner, rest = e / inner;
      global = ((rest / along) * global_along + rest % along + shift) * inner + in;
    }
    out[i] = float(double(counter_normal(seed, global)) * layout.std);
  }
}

void initialise_shard(const ParamLayout& layout, uint64_t run_seed, int tp_rank, int tp_size) {
  torch::NoGradGuard no_grad;
  if (!layout.tensor.is_contiguous() || layout.tensor.scalar_type() != torch::kFloat)
    throw std::logic_error("parameter " + layout.name + " is not a materialised float tensor");
  initial_values(layout, layout.tensor.sizes().vec(), run_seed, tp_rank, tp_size, 0,
                 size_t(layout.tensor.numel()), layout.tensor.data_ptr<float>());
}

}  // namespace cmpi::models
