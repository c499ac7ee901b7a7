#include "parallel/zero/zero_parameter_store.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "comm/communicator.h"
#include "parallel/unmaterialised.h"

namespace cmpi::parallel {

ZeroParameterStore::ZeroParameterStore(std::vector<ParamInfo>& params,
                                       const std::vector<std::vector<int64_t>>& shapes,
                                       const ZeroLayout& layout,
                                       const DataParallelOptimizerOptions& options,
                                       comm::Communicator& zero, OrderedCommQueue* queue,
                                       std::function<void()> on_memory_change,
                                       const torch::TensorOptions& float_options)
    : params_(params),
      shapes_(shapes),
      layout_(layout),
      options_(options),
      zero_(zero),
      stage_(options.zero_stage),
      on_memory_change_(std::move(on_memory_change)),
      float_options_(float_options) {
  torch::NoGradGuard no_grad;
  const bool per_layer = stage_ == 3 && !options.layer_schedule.empty();
  if (per_layer && queue == nullptr)
    throw std::logic_error("ZeRO-3 per layer: the parameter store needs the zero-group queue");
  if (!per_layer) {
    flat_ = torch::zeros({int64_t(layout_.padded())}, float_options_);
    for (size_t i = 0; i < params_.size(); ++i) {
      auto parameter_view = view(i);
      parameter_view.copy_(params_[i].tensor.detach());
      params_[i].tensor.set_data(parameter_view);
    }
  }
  if (per_layer) {
    fill_shard_per_layer();
  } else if (stage_ == 3) {
    // The model stays materialised until the first step; the shard is the master copy.
    shard_ = torch::zeros({int64_t(layout_.shard_size())}, torch::kFloat);
    copy_flat_to_shard();
  }
  if ((stage_ == 1 || stage_ == 2) && dp() > 1) staging_.assign(layout_.largest_piece(), 0.0f);
  counts_.assign(size_t(dp()), 0);
  if (per_layer)
    gatherer_ = std::make_unique<LayerParameterGatherer>(
        params_, shapes_, layout_, options_.layer_schedule.uses, shard_.data_ptr<float>(), zero_,
        *queue, kWeightKeyBase, on_memory_change_);
}

ZeroParameterStore::~ZeroParameterStore() = default;

torch::Tensor ZeroParameterStore::view(size_t i) const {
  return flat_.narrow(0, int64_t(layout_.offsets()[i]), int64_t(layout_.params()[i].numel))
      .view(shapes_[i]);
}

void ZeroParameterStore::fill_shard_per_layer() {
  shard_ = torch::zeros({int64_t(layout_.shard_size())}, torch::kFloat);
  float* shard = shard_.data_ptr<float>();
  for (const auto& s : layout_.owned_segments()) {
    const size_t offset = s.flat_offset - layout_.offsets()[s.param];
    float* out = shard + s.shard_offset;
    if (options_.initial_values) {
      options_.initial_values(s.param, offset, s.length, out);
      continue;
    }
    const auto& tensor = params_[s.param].tensor;
    if (!is_materialised(tensor))
      throw std::invalid_argument("ZeRO-3: parameter " + params_[s.param].name +
                                  " has no values and no initial_values were given");
    const auto values = tensor.detach().contiguous();
    std::memcpy(out, values.data_ptr<float>() + offset, s.length * sizeof(float));
  }
  for (size_t i = 0; i < params_.size(); ++i)
    params_[i].tensor.set_data(unmaterialised(shapes_[i]));
}

void ZeroParameterStore::copy_flat_to_shard() {
  const float* flat = flat_.data_ptr<float>();
  float* shard = shard_.data_ptr<float>();
  for (const auto& b : layout_.buckets())
    std::memcpy(shard + b.shard_offset, flat + b.start + size_t(layout_.dp_rank()) * b.piece,
                b.piece * sizeof(float));
}

void ZeroParameterStore::gather() {
  torch::NoGradGuard no_grad;
  flat_ = torch::empty({int64_t(layout_.padded())}, torch::kFloat);
  float* flat = flat_.data_ptr<float>();
  float* shard = shard_.data_ptr<float>();
  for (size_t b = 0; b < layout_.buckets().size(); ++b) {
    const auto& bucket = layout_.buckets()[b];
    if (dp() == 1) {
      std::memcpy(flat + bucket.start, shard + bucket.shard_offset, bucket.piece * sizeof(float));
      continue;
    }
    std::fill(counts_.begin(), counts_.end(), bucket.piece);
    zero_.allgather(shard + bucket.shard_offset, flat + bucket.start, counts_, comm::Role::kWeight,
                    kWeightKeyBase + b);
  }
  for (size_t i = 0; i < params_.size(); ++i) params_[i].tensor.set_data(view(i));
  peak_gathered_bytes_ = std::max(peak_gathered_bytes_, int64_t(layout_.padded() * sizeof(float)));
  on_memory_change_();
}

void ZeroParameterStore::release() {
  if (gatherer_) {
    gatherer_->release_all();  // also waits for prefetches nobody used
    return;
  }
  for (auto& p : params_) {
    p.tensor.mutable_grad() = torch::Tensor();
    p.tensor.set_data(torch::empty({0}, torch::kFloat));
  }
  flat_ = torch::Tensor();
}

void ZeroParameterStore::allgather_updated() {
  if (dp() == 1) return;
  if (!flat_.is_cpu()) {
    allgather_updated_staged();
    return;
  }
  float* flat = flat_.data_ptr<float>();
  for (size_t b = 0; b < layout_.buckets().size(); ++b) {
    const auto& bucket = layout_.buckets()[b];
    float* own = flat + bucket.start + size_t(layout_.dp_rank()) * bucket.piece;
    std::memcpy(staging_.data(), own, bucket.piece * sizeof(float));
    std::fill(counts_.begin(), counts_.end(), bucket.piece);
    zero_.allgather(staging_.data(), flat + bucket.start, counts_, comm::Role::kWeight,
                    kWeightKeyBase + b);
    std::memcpy(own, staging_.data(), bucket.piece * sizeof(float));
  }
}

// A device's flat buffer: each bucket's own piece copied to the host, the
// allgather into a host span, the span copied back (the same collective, so
// the same bits, as the host path).
void ZeroParameterStore::allgather_updated_staged() {
  const size_t largest = layout_.largest_piece() * size_t(dp());
  if (!host_span_.defined() || size_t(host_span_.numel()) < largest)
    host_span_ = torch::empty({int64_t(largest)}, torch::TensorOptions().dtype(torch::kFloat));
  for (size_t b = 0; b < layout_.buckets().size(); ++b) {
    const auto& bucket = layout_.buckets()[b];
    const auto own = int64_t(bucket.start + size_t(layout_.dp_rank()) * bucket.piece);
    torch::from_blob(staging_.data(), {int64_t(bucket.piece)}, torch::kFloat)
        .copy_(flat_.narrow(0, own, int64_t(bucket.piece)));
    std::fill(counts_.begin(), counts_.end(), bucket.piece);
    const auto span = int64_t(bucket.piece * size_t(dp()));
    zero_.allgather(staging_.data(), host_span_.data_ptr<float>(), counts_, comm::Role::kWeight,
                    kWeightKeyBase + b);
    // As the host path: the own piece is what staging_ holds after the call.
    std::memcpy(host_span_.data_ptr<float>() + size_t(layout_.dp_rank()) * bucket.piece,
                staging_.data(), bucket.piece * sizeof(float));
    flat_.narrow(0, int64_t(bucket.start), span).copy_(host_span_.narrow(0, 0, span));
  }
}

StepBuffer ZeroParameterStore::values() const {
  return stage_ == 3 ? StepBuffer{shard_, RunAddress::kShard}
                     : StepBuffer{flat_, RunAddress::kFlat};
}

const float* ZeroParameterStore::values_of(const ZeroSegment& run) const {
  if (stage_ == 3) return shard_.data_ptr<float>() + run.shard_offset;
  return flat_.defined() ? flat_.data_ptr<float>() + run.flat_offset : nullptr;
}

void ZeroParameterStore::load(const StateSource& source, const std::vector<ZeroSegment>& runs) {
  if (flat_.defined()) {
    // On a device the values are read into a host copy, then moved.
    auto host =
        flat_.is_cpu() ? flat_ : torch::empty(flat_.sizes(), flat_.options().device(torch::kCPU));
    float* flat = host.data_ptr<float>();
    for (size_t i = 0; i < params_.size(); ++i)
      source(i, StateKind::kValues, 0, layout_.params()[i].numel, flat + layout_.offsets()[i]);
    if (!flat_.is_cpu()) flat_.copy_(host);
    if (stage_ == 3) copy_flat_to_shard();
    return;
  }
  // Stage 3 between steps: only the shard holds values.
  for (const auto& s : runs)
    source(s.param, StateKind::kValues, s.flat_offset - layout_.offsets()[s.param], s.length,
           shard_.data_ptr<float>() + s.shard_offset);
}

int64_t ZeroParameterStore::parameter_bytes() const {
  const size_t elements =
      (flat_.defined() ? layout_.padded() : 0) + size_t(shard_.defined() ? shard_.numel() : 0);
  return int64_t(elements * sizeof(float)) + (gatherer_ ? gatherer_->live_bytes() : 0);
}

int64_t ZeroParameterStore::buffer_bytes() const {
  return int64_t(staging_.size() * sizeof(float));
}

int64_t ZeroParameterStore::peak_gathered_bytes() const {
  return gatherer_ ? gatherer_->peak_bytes() : peak_gathered_bytes_;
}

void ZeroParameterStore::abandon_in_flight() {
  new torch::Tensor(std::move(shard_));
  new torch::Tensor(std::move(flat_));
  (void)gatherer_.release();
}

}  // namespace cmpi::parallel
