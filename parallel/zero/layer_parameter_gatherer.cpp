// The gather task of a unit copies nothing but its own buckets: bucket b's
// dp pieces land at b.start - unit.start in the unit's buffer, each rank's
// piece from its shard at b.shard_offset (see zero_layout.h), so the buffer
// is the unit's slice of the flat parameter layout and parameter views sit at
// offset - unit.start.
#include "parallel/zero/layer_parameter_gatherer.h"

#include <algorithm>
#include <cstring>
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
      rules_(std::move(uses), layout.units().size()),
      shard_(shard),
      zero_(zero),
      queue_(queue),
      weight_key_base_(weight_key_base),
      on_gather_(std::move(on_gather)),
      units_(layout.units().size()) {}

LayerParameterGatherer::~LayerParameterGatherer() = default;

void LayerParameterGatherer::before_forward(size_t use) {
  rules_.before_forward(use, *this);
}

void LayerParameterGatherer::after_forward(size_t use) {
  rules_.after_forward(use, torch::GradMode::is_enabled(), *this);
}

void LayerParameterGatherer::before_backward(size_t use) {
  rules_.before_backward(use, *this);
}

void LayerParameterGatherer::after_backward(size_t use) {
  rules_.after_backward(use, *this);
}

void LayerParameterGatherer::release_all() {
  for (size_t unit = 0; unit < units_.size(); ++unit) release(unit);
}

void LayerParameterGatherer::prefetch(size_t u) {
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

void LayerParameterGatherer::gather(size_t u) {
  prefetch(u);
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
