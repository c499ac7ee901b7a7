#include "parallel/diloco/diloco_sync.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "comm/clock.h"
#include "comm/communicator.h"
#include "parallel/mesh/process_groups.h"
#include "parallel/zero/flat_param.h"

namespace cmpi::parallel {
namespace {

// The flat parameter the sync's layout cuts (flat_param.h: tp-replicated
// parameters apart, summed exactly; the tied table apart, shared by the first
// stage). A pseudo-gradient is dense even where the gradient is sparse, so
// the sparse embedding shares buckets as any parameter does.
FlatParam pseudo_gradient_param_of(const ParamInfo& param, bool tp_replicas) {
  FlatParam flat = flat_param_of(param, tp_replicas);
  flat.own_buckets = false;
  return flat;
}

const DilocoSyncOptions& checked(const DilocoSyncOptions& options,
                                 const std::vector<ParamInfo>& params) {
  if (!(options.outer.lr > 0))
    throw std::invalid_argument("DiLoCo: the outer learning rate must be > 0, got " +
                                std::to_string(options.outer.lr));
  if (!(options.outer.momentum >= 0 && options.outer.momentum < 1))
    throw std::invalid_argument("DiLoCo: the outer momentum must lie in [0, 1), got " +
                                std::to_string(options.outer.momentum));
  if (options.warmup_steps < 0)
    throw std::invalid_argument("DiLoCo: warmup_steps must be >= 0, got " +
                                std::to_string(options.warmup_steps));
  if (options.fragment_of_param.size() != params.size())
    throw std::invalid_argument("DiLoCo: " + std::to_string(options.fragment_of_param.size()) +
                                " fragment indices for " + std::to_string(params.size()) +
                                " parameters");
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& t = params[i].tensor;
    if (!t.defined() || t.scalar_type() != torch::kFloat || !t.is_contiguous())
      throw std::invalid_argument("DiLoCo: parameter " + params[i].name +
                                  " is not a contiguous float32 tensor");
    const int f = options.fragment_of_param[i];
    if (f < 0 || f >= options.fragments)
      throw std::invalid_argument("DiLoCo: parameter " + params[i].name + " is in fragment " +
                                  std::to_string(f) + ", outside [0, " +
                                  std::to_string(options.fragments) + ")");
    if (params[i].tied_across_stages && !options.tied)
      throw std::invalid_argument("DiLoCo: parameter " + params[i].name +
                                  " is tied across pipeline stages, but no tied share is given");
  }
  return options;
}

}  // namespace

DilocoSync::DilocoSync(std::vector<ParamInfo> params, DilocoSyncOptions options,
                       ProcessGroups& groups)
    : params_(std::move(params)),
      options_(checked(options, params_)),
      groups_(groups),
      schedule_(options_.sync_every, options_.fragments) {
  const bool tp_replicas = groups.tp().size() > 1;
  size_t largest = 0;
  for (int64_t f = 0; f < options_.fragments; ++f) {
    Fragment fragment;
    std::vector<FlatParam> flat;
    for (size_t i = 0; i < params_.size(); ++i) {
      if (options_.fragment_of_param[i] != int(f)) continue;
      fragment.params.push_back(i);
      flat.push_back(pseudo_gradient_param_of(params_[i], tp_replicas));
    }
    if (!flat.empty()) {
      fragment.layout.emplace(std::move(flat), 1, 0, options_.bucket_bytes);
      fragment.outer.assign(fragment.layout->total(), 0.0f);
      fragment.momentum.assign(fragment.layout->total(), 0.0f);
      for (const auto& bucket : fragment.layout->buckets())
        largest = std::max(largest, bucket.piece);
    }
    fragments_.push_back(std::move(fragment));
  }
  delta_.assign(largest, 0.0f);
}

void DilocoSync::copy_span(const Fragment& fragment, size_t start, size_t n, float* flat,
                           bool to_flat) const {
  const auto& offsets = fragment.layout->offsets();
  const auto& flats = fragment.layout->params();
  const size_t end = start + n;
  for (size_t k = 0; k < fragment.params.size(); ++k) {
    const size_t begin = offsets[k], stop = begin + flats[k].numel;
    if (stop <= start || begin >= end) continue;
    const size_t from = std::max(begin, start), to = std::min(stop, end);
    const auto& tensor = params_[fragment.params[k]].tensor;
    float* there = flat + (from - start);
    if (!tensor.is_cpu()) {
      // A device's parameters: copies between the device and the host span.
      torch::NoGradGuard no_grad;
      auto on_device = tensor.view(-1).narrow(0, int64_t(from - begin), int64_t(to - from));
      auto on_host = torch::from_blob(there, {int64_t(to - from)}, torch::kFloat);
      if (to_flat)
        on_host.copy_(on_device);
      else
        on_device.copy_(on_host);
      continue;
    }
    float* values = tensor.data_ptr<float>() + (from - begin);
    if (to_flat)
      std::memcpy(there, values, (to - from) * sizeof(float));
    else
      std::memcpy(values, there, (to - from) * sizeof(float));
  }
}

void DilocoSync::capture_outer() {
  for (auto& fragment : fragments_) {
    if (!fragment.layout) continue;
    copy_span(fragment, 0, fragment.outer.size(), fragment.outer.data(), /*to_flat=*/true);
    std::fill(fragment.momentum.begin(), fragment.momentum.end(), 0.0f);
  }
  outer_set_ = true;
}

void DilocoSync::before_inner_step(int64_t step) {
  const int64_t warmup = options_.warmup_steps;
  if (step < warmup) return;
  if (!outer_set_ || (warmup > 0 && step == warmup)) capture_outer();
}

const std::vector<int>& DilocoSync::after_inner_step(int64_t steps_done) {
  last_synced_ = schedule_.due(steps_done - options_.warmup_steps);
  last_sync_seconds_ = 0;
  if (last_synced_.empty()) return last_synced_;
  if (!outer_set_)
    throw std::logic_error("DiLoCo: a sync before any inner step (before_inner_step not called)");
  const auto start = comm::Clock::now();
  for (int f : last_synced_) sync_fragment(f);
  last_sync_seconds_ = comm::seconds_since(start);
  return last_synced_;
}

void DilocoSync::sync_fragment(int f) {
  Fragment& fragment = fragments_[size_t(f)];
  if (!fragment.layout) return;  // this stage holds none of its layers
  torch::NoGradGuard no_grad;
  comm::Communicator& dp = groups_.dp();
  const float inverse_dp = 1.0f / float(dp.size());
  size_t tied_part = 0;
  const auto& buckets = fragment.layout->buckets();
  for (size_t b = 0; b < buckets.size(); ++b) {
    const ZeroBucket& bucket = buckets[b];
    const size_t n = bucket.piece;  // dp = 1: the whole bucket
    float* delta = delta_.data();
    float* outer = fragment.outer.data() + bucket.start;
    copy_span(fragment, bucket.start, n, delta, /*to_flat=*/true);
    for (size_t i = 0; i < n; ++i) delta[i] = outer[i] - delta[i];
    const uint64_t key = kKeyBase + uint64_t(f) * kFragmentKeyStride + b;
    if (bucket.exact) {
      // The same bits on every tp rank, which each sum in their own dp group.
      dp.exact_allreduce(delta, n, key);
    } else if (bucket.tied) {
      if (options_.tied->reduces) dp.allreduce(delta, n, comm::Role::kPseudoGradient, key);
      options_.tied->share(kTiedPartBase + tied_part++, delta, n);
    } else {
      dp.allreduce(delta, n, comm::Role::kPseudoGradient, key);
    }
    for (size_t i = 0; i < n; ++i) delta[i] *= inverse_dp;
    outer_nesterov_step(options_.outer, delta, fragment.momentum.data() + bucket.start, outer, n);
    copy_span(fragment, bucket.start, n, outer, /*to_flat=*/false);
  }
}

int64_t DilocoSync::state_bytes() const {
  int64_t bytes = int64_t(delta_.size() * sizeof(float));
  for (const auto& fragment : fragments_)
    bytes += int64_t((fragment.outer.size() + fragment.momentum.size()) * sizeof(float));
  return bytes;
}

// Layout: "diloco1", then per fragment its element count (uint64) and its
// outer weights and momentum (float32 each).
std::string DilocoSync::save() const {
  std::string out = "diloco1";
  for (const auto& fragment : fragments_) {
    const uint64_t n = fragment.outer.size();
    out.append(reinterpret_cast<const char*>(&n), sizeof n);
    out.append(reinterpret_cast<const char*>(fragment.outer.data()), n * sizeof(float));
    out.append(reinterpret_cast<const char*>(fragment.momentum.data()), n * sizeof(float));
  }
  return out;
}

void DilocoSync::load(const std::string& bytes) {
  const std::string magic = "diloco1";
  const auto bad = [](const std::string& why) {
    return std::runtime_error("rank state diloco/outer: " + why);
  };
  if (bytes.compare(0, magic.size(), magic) != 0) throw bad("not DiLoCo's outer state");
  size_t at = magic.size();
  std::vector<std::vector<float>> outers, momenta;
  for (size_t f = 0; f < fragments_.size(); ++f) {
    uint64_t n = 0;
    if (bytes.size() - at < sizeof n) throw bad("ends before fragment " + std::to_string(f));
    std::memcpy(&n, bytes.data() + at, sizeof n);
    at += sizeof n;
    if (n != fragments_[f].outer.size())
      throw bad("fragment " + std::to_string(f) + " holds " + std::to_string(n) +
                " values, this run's " + std::to_string(fragments_[f].outer.size()) +
                " (another parallel.diloco.fragments or model?)");
    if ((bytes.size() - at) / sizeof(float) < 2 * n)
      throw bad("ends inside fragment " + std::to_string(f));
    std::vector<float> outer(n), momentum(n);
    std::memcpy(outer.data(), bytes.data() + at, n * sizeof(float));
    at += n * sizeof(float);
    std::memcpy(momentum.data(), bytes.data() + at, n * sizeof(float));
    at += n * sizeof(float);
    outers.push_back(std::move(outer));
    momenta.push_back(std::move(momentum));
  }
  if (at != bytes.size())
    throw bad(std::to_string(bytes.size() - at) +
              " bytes after the last fragment (another parallel.diloco.fragments?)");
  for (size_t f = 0; f < fragments_.size(); ++f) {
    fragments_[f].outer = std::move(outers[f]);
    fragments_[f].momentum = std::move(momenta[f]);
  }
  outer_set_ = true;
}

}  // namespace cmpi::parallel
