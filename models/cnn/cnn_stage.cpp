#include "models/cnn/cnn_stage.h"

#include <memory>
#include <stdexcept>
#include <string>

#include "models/cnn/resnet_blocks.h"
#include "models/recompute.h"

namespace cmpi::models {
namespace {

// `layer` on x, keeping only x for backward. The rerun in backward saves the
// layer's buffers (BatchNorm running statistics and batch counters) and
// writes them back afterwards: the first run already counted this batch.
// The write goes through variable_data(), which shares the storage but not
// the version counter: BatchNorm's backward keeps the running statistics
// among its saved inputs (it does not read them in training mode), and a
// tracked in-place write would make autograd refuse them.
torch::Tensor recomputed_forward(torch::nn::AnyModule layer, const torch::Tensor& x) {
  auto ran = std::make_shared<bool>(false);
  RecomputedForward forward = [layer, ran](const torch::autograd::variable_list& in) mutable {
    if (!*ran) {
      *ran = true;
      return torch::autograd::variable_list{layer.forward(in[0])};
    }
    std::vector<torch::Tensor> buffers = layer.ptr()->buffers(), kept;
    for (const auto& buffer : buffers) kept.push_back(buffer.clone());
    auto out = layer.forward(in[0]);
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < buffers.size(); ++i) buffers[i].variable_data().copy_(kept[i]);
    return torch::autograd::variable_list{out};
  };
  return recompute_in_backward(std::move(forward), {x})[0];
}

}  // namespace

CnnStageImpl::CnnStageImpl(const std::vector<CnnLayerSpec>& plan, int64_t first, int64_t end,
                           const ConvLayerFactory& factory, uint64_t seed,
                           int64_t recomputed_blocks)
    : plan_(plan), first_(first), end_(end) {
  if (first < 0 || end > int64_t(plan.size()) || first >= end)
    throw std::invalid_argument("cnn stage: layers [" + std::to_string(first) + ", " +
                                std::to_string(end) + ") are not a non-empty range of the " +
                                std::to_string(plan.size()) + "-layer model");
  for (int64_t i = first; i < end; ++i) {
    torch::manual_seed(seed * 1000003ull + uint64_t(i));
    const CnnLayerSpec& spec = plan[size_t(i)];
    torch::nn::AnyModule layer;
    switch (spec.kind) {
      case CnnLayerSpec::Kind::kStem:
        layer = torch::nn::AnyModule(ResnetStem(spec, factory));
        break;
      case CnnLayerSpec::Kind::kBottleneck:
        layer = torch::nn::AnyModule(PreActBottleneck(spec, factory));
        break;
      case CnnLayerSpec::Kind::kHead:
        layer = torch::nn::AnyModule(ResnetHead(spec, factory));
        break;
    }
    register_module("layer" + std::to_string(i), layer.ptr());
    layers_.push_back(std::move(layer));
    const bool recomputed =
        spec.kind == CnnLayerSpec::Kind::kBottleneck && recomputed_blocks_ < recomputed_blocks;
    recomputed_blocks_ += recomputed ? 1 : 0;
    recomputed_.push_back(recomputed);
  }
}

torch::Tensor CnnStageImpl::forward(torch::Tensor x) {
  for (size_t i = 0; i < layers_.size(); ++i)
    x = recomputed_[i] ? recomputed_forward(layers_[i], x) : layers_[i].forward(x);
  return x;
}

bool CnnStageImpl::has_head() const {
  return plan_[size_t(end_ - 1)].kind == CnnLayerSpec::Kind::kHead;
}

std::vector<parallel::ParamInfo> CnnStageImpl::param_infos() {
  std::vector<parallel::ParamInfo> infos;
  for (const auto& item : named_parameters()) {
    parallel::ParamInfo info;
    info.name = item.key();
    info.tensor = item.value();
    info.weight_decay = item.value().dim() > 1;
    infos.push_back(info);
  }
  return infos;
}

std::vector<std::pair<std::string, torch::Tensor>> CnnStageImpl::named_running_statistics() {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& item : named_buffers()) {
    const std::string& name = item.key();
    if (name.size() >= 12 && (name.compare(name.size() - 12, 12, "running_mean") == 0 ||
                              name.compare(name.size() - 11, 11, "running_var") == 0))
      out.emplace_back(name, item.value());
  }
  return out;
}

std::vector<torch::Tensor> CnnStageImpl::running_statistics() {
  std::vector<torch::Tensor> out;
  for (auto& named : named_running_statistics()) out.push_back(named.second);
  return out;
}

}  // namespace cmpi::models
