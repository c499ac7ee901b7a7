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
namespace {

// The index of the first non-finite of values[offset, offset + n), n if none:
// a host scan on the CPU, tensor operations (one copy of the index) on a device.
size_t first_nonfinite_in(const torch::Tensor& values, size_t offset, size_t n) {
  if (values.is_cpu()) return compress::first_nonfinite(values.data_ptr<float>() + offset, n);
  const auto bad = values.narrow(0, int64_t(offset), int64_t(n)).isfinite().logical_not().nonzero();
  return bad.numel() == 0 ? n : size_t(bad[0][0].item<int64_t>());
}

}  // namespace

const std::string& ZeroOptimizer::param_at(size_t at) const {
  const auto& offsets = layout_.offsets();
  const size_t i = size_t(std::upper_bound(offsets.begin(), offsets.end(), at) - offsets.begin());
  return layout_.params()[i == 0 ? 0 : i - 1].name;
}

NonfiniteGradients ZeroOptimizer::locate_nonfinite_gradients() const {
  NonfiniteGradients found;
  std::string reduced;
  if (reduction_ == Reduction::kAllreduce) {
    const size_t bad = first_nonfinite_in(flat_grads_, 0, layout_.padded());
    if (bad < layout_.padded()) reduced = param_at(bad);
  } else {
    // Only this rank's pieces were reduced (in the shard, or in place).
    const bool in_shard = stage_ >= 2;
    const torch::Tensor& grads = in_shard ? grad_shard_ : flat_grads_;
    size_t first = kAllFinite;
    for (const auto& s : layout_.owned_segments()) {
      const size_t bad =
          first_nonfinite_in(grads, in_shard ? s.shard_offset : s.flat_offset, s.length);
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
