// ZeroOptimizer after a non-finite global norm (step 3 of zero_optimizer.cpp):
// where the first non-finite value was, before the reduction (this rank's own
// backward) and after it (the reduced gradient this rank holds), named by
// parameter.
#include <algorithm>
#include <cmath>

#include "comm/communicator.h"
#include "compress/nonfinite.h"
#include "parallel/mesh/process_groups.h"
#include "parallel/zero/zero_optimizer.h"

namespace cmpi::parallel {
const std::string& ZeroOptimizer::param_at(size_t at) const {
  const auto& offsets = layout_.offsets();
  const size_t i = size_t(std::upper_bound(offsets.begin(), offsets.end(), at) - offsets.begin());
  return layout_.params()[i == 0 ? 0 : i - 1].name;
}

NonfiniteGradients ZeroOptimizer::locate_nonfinite_gradients() const {
  NonfiniteGradients found;
  std::string reduced;
  if (reduction_ == Reduction::kAllreduce) {
    const size_t bad = compress::first_nonfinite(flat_grads_.data_ptr<float>(), layout_.padded());
    if (bad < layout_.padded()) reduced = param_at(bad);
  } else {
    // Only this rank's pieces were reduced (in the shard, or in place).
    const bool in_shard = stage_ >= 2;
    const float* grads = in_shard ? grad_shard_.data_ptr<float>() : flat_grads_.data_ptr<float>();
    size_t first = kAllFinite;
    for (const auto& s : layout_.owned_segments()) {
      const size_t bad =
          compress::first_nonfinite(grads + (in_shard ? s.shard_offset : s.flat_offset), s.length);
      if (bad < s.length) first = std::min(first, s.flat_offset + bad);
    }
    if (first != kAllFinite) reduced = param_at(first);
  }
  if (dp() == 1) {
    found.own_param = reduced;  // nothing was reduced: the own gradient is what is held
    return found;
  }
  found.reduced_param = reduced;
  const size_t own = *std::min_element(own_nonfinite_at_.begin(), own_nonfinite_at_.end());
  if (own != kAllFinite) found.own_param = param_at(own);
  return found;
}

}  // namespace cmpi::parallel
