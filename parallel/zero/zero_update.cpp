// ZeroOptimizer's steps 3 and 4 (zero_optimizer.cpp), on the reduced
// gradients: the global norm, with each rank summing the squares of the
// gradient it owns (tensor-parallel and replicated parameters apart, so that
// tp counts a replicated one once); after a non-finite norm, where the first
// non-finite value was, before and after the reduction; the one pass that
// unscales (loss scaling) and clips; and AdamW on this rank's segments.
#include <algorithm>
#include <cmath>

#include "comm/communicator.h"
#include "compress/nonfinite.h"
#include "parallel/mesh/process_groups.h"
#include "parallel/zero/zero_optimizer.h"

namespace cmpi::parallel {
namespace {

double sum_of_squares(const float* data, size_t n) {
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += double(data[i]) * double(data[i]);
  return sum;
}

}  // namespace

// After an allreduce a rank holds the whole reduced gradient, so the norm
// needs no dp traffic; after a reduce-scatter only its pieces (in its shard,
// or in place in the flat gradients at ZeRO-1), whose squares are summed over
// the zero group first.
double ZeroOptimizer::global_norm() {
  const bool sharded_grads = stage_ >= 2;
  const bool partial = reduction_ != Reduction::kAllreduce;
  const float* grads = sharded_grads ? grad_shard_.data() : flat_grads_.data_ptr<float>();
  const auto& segments = partial ? layout_.owned_segments() : layout_.whole_segments();
  double tensor_parallel = 0, replicated = 0;
  for (const auto& s : segments) {
    const auto& param = layout_.params()[s.param];
    if (param.counted_on_other_stage) continue;
    const double squares =
        sum_of_squares(grads + (sharded_grads ? s.shard_offset : s.flat_offset), s.length);
    (param.tensor_parallel ? tensor_parallel : replicated) += squares;
  }
  if (partial && dp() > 1) {
    float sums[2] = {float(tensor_parallel), float(replicated)};
    groups_.zero().allreduce(sums, 2, comm::Role::kOther);
    tensor_parallel = sums[0];
    replicated = sums[1];
  }
  if (groups_.tp().size() > 1) {
    float sum = float(tensor_parallel);
    groups_.tp().allreduce(&sum, 1, comm::Role::kOther);
    tensor_parallel = sum;
  }
  double total = tensor_parallel + replicated;
  if (groups_.pp().size() > 1) {
    float sum = float(total);
    groups_.pp().allreduce(&sum, 1, comm::Role::kOther);
    total = sum;
  }
  return std::sqrt(total);
}

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
    const float* grads = in_shard ? grad_shard_.data() : flat_grads_.data_ptr<float>();
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

// ------------------------------------------------------------ update

void ZeroOptimizer::scale_gradients(float factor) {
  float* grads = stage_ >= 2 ? grad_shard_.data() : flat_grads_.data_ptr<float>();
  const size_t n = stage_ >= 2 ? grad_shard_.size() : layout_.padded();
  for (size_t i = 0; i < n; ++i) grads[i] *= factor;
}

void ZeroOptimizer::update(double lr) {
  const AdamWStep step(options_.adamw, lr, steps_);
  float* params = stage_ == 3 ? param_shard_.data() : flat_params_.data_ptr<float>();
  float* grads = stage_ >= 2 ? grad_shard_.data() : flat_grads_.data_ptr<float>();
  for (const auto& s : segments_) {
    const size_t param_at = stage_ == 3 ? s.shard_offset : s.flat_offset;
    const size_t grad_at = stage_ >= 2 ? s.shard_offset : s.flat_offset;
    adamw_update(step, layout_.params()[s.param].weight_decay, params + param_at, grads + grad_at,
                 exp_avg_.data() + s.shard_offset, exp_avg_sq_.data() + s.shard_offset, s.length);
  }
}

}  // namespace cmpi::parallel
