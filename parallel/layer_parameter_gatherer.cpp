// The gather task of a unit copies nothing but its own buckets: bucket b's
// dp pieces land at b.start - unit.start in the unit's buffer, each rank's
// piece from its shard at b.shard_offset (see zero_layout.h), so the buffer
// is the unit's slice of the flat parameter layout and parameter views sit at
// offset - unit.start.
#include "parallel/layer_parameter_gatherer.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "comm/communicator.h"
#include "parallel/unmaterialised.h"

namespace cmpi::parallel {

LayerParameterGatherer::LayerParameterGatherer(std::vector<ParamInfo>& params,
                                               const std::vector<std::vector<int64_t>>& shapes,
                                               const ZeroLayout& layout,
                                               std::vector<std::vector<size_t>> uses,
                                               const float* shard, comm::Communicator& zero,
                                               OrderedCommQueue& queue, uint64_t weight_key_base,
                                               std::function<void()> on_gather)
    : params_(params),
      shapes_(shapes),
      layout_(layout),
      uses_(std::move(uses)),
      shard_(shard),
      zero_(zero),
      queue_(queue),
      weight_key_base_(weight_key_base),
      on_gather_(std::move(on_gather)),
      units_(layout.units().size()) {
  for (size_t u = 0; u < uses_.size(); ++u)
    for (size_t unit : uses_[u])
      if (unit >= units_.size())
        throw std::invalid_argument("layer schedule: use " + std::to_string(u) + " reads unit " +
                                    std::to_string(unit) + " of " + std::to_string(units_.size()));
}

LayerParameterGatherer::~LayerParameterGatherer() = default;

const std::vector<size_t>& LayerParameterGatherer::units_of(size_t use) const {
  if (use >= uses_.size())
    throw std::logic_error("per-layer ZeRO-3: the model ran use " + std::to_string(use) +
                           " of a schedule of " + std::to_string(uses_.size()) + " uses");
  return uses_[use];
}

void LayerParameterGatherer::before_forward(size_t use) {
  for (size_t unit : units_of(use)) materialise(unit);
  if (use + 1 < uses_.size())
    for (size_t unit : uses_[use + 1]) request(unit);
}

void LayerParameterGatherer::after_forward(size_t use) {
  if (use + 1 < uses_.size())
    release_except(use, &uses_[use + 1]);
  else if (!torch::GradMode::is_enabled())
    release_except(use, nullptr);
  // The last use with gradients keeps its units: its backward comes next.
}

void LayerParameterGatherer::before_backward(size_t use) {
  for (size_t unit : units_of(use)) materialise(unit);
  if (use > 0)
    for (size_t unit : uses_[use - 1]) request(unit);
}

void LayerParameterGatherer::after_backward(size_t use) {
  release_except(use, use > 0 ? &uses_[use - 1] : nullptr);
}

void LayerParameterGatherer::release_except(size_t use, const std::vector<size_t>* keep) {
  for (size_t unit : units_of(use))
    if (!keep || std::find(keep->begin(), keep->end(), unit) == keep->end()) release(unit);
}

void LayerParameterGatherer::release_all() {
  for (size_t unit = 0; unit < units_.size(); ++unit) release(unit);
}

void LayerParameterGatherer::request(size_t u) {
  Unit& unit = units_[u];
  if (unit.state != State::kReleased) return;
  const ZeroUnit& range = layout_.units()[u];
  unit.buffer = torch::empty({int64_t(range.end - range.start)}, torch::kFloat);
  live_bytes_ += int64_t((range.end - range.start) * sizeof(float));
  peak_bytes_ = std::max(peak_bytes_, live_bytes_);
  float* buffer = unit.buffer.data_ptr<float>();
  const size_t dp = size_t(layout_.dp());
  // Runs on the queue's thread: touches only the shard, this unit's buffer
  // and the zero group, which nobody else uses while tasks are pending.
  auto gather = [this, range, buffer, dp] {
    for (size_t b = range.first_bucket; b < range.end_bucket; ++b) {
      const auto& bucket = layout_.buckets()[b];
      float* out = buffer + (bucket.start - range.start);
      if (dp == 1) {
        std::memcpy(out, shard_ + bucket.shard_offset, bucket.piece * sizeof(float));
        continue;
      }
      const std::vector<size_t> counts(dp, bucket.piece);
      zero_.allgather(shard_ + bucket.shard_offset, out, counts, comm::Role::kWeight,
                      weight_key_base_ + b);
    }
  };
  unit.ticket = queue_.submit(std::move(gather), "parameter gather of unit " + std::to_string(u) +
                                                     " (allgather over zero)");
  unit.state = State::kInFlight;
  if (on_gather_) on_gather_();
}

void LayerParameterGatherer::materialise(size_t u) {
  request(u);
  Unit& unit = units_[u];
  if (unit.state == State::kGathered) return;
  queue_.wait(unit.ticket);
  const ZeroUnit& range = layout_.units()[u];
  for (size_t i = range.first_param; i < range.end_param; ++i) {
    const int64_t at = int64_t(layout_.offsets()[i] - range.start);
    params_[i].tensor.set_data(
        unit.buffer.narrow(0, at, int64_t(layout_.params()[i].numel)).view(shapes_[i]));
  }
  unit.state = State::kGathered;
}

void LayerParameterGatherer::release(size_t u) {
  Unit& unit = units_[u];
  if (unit.state == State::kReleased) return;
  if (unit.state == State::kInFlight) queue_.wait(unit.ticket);  // the task writes the buffer
  const ZeroUnit& range = layout_.units()[u];
  if (unit.state == State::kGathered)
    for (size_t i = range.first_param; i < range.end_param; ++i)
      params_[i].tensor.set_data(unmaterialised(shapes_[i]));
  unit.buffer = torch::Tensor();
  unit.state = State::kReleased;
  live_bytes_ -= int64_t((range.end - range.start) * sizeof(float));
}

}  // namespace cmpi::parallel
