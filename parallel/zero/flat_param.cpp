#include "parallel/zero/flat_param.h"

#include <stdexcept>
#include <string>

namespace cmpi::parallel {

FlatParam flat_param_of(const ParamInfo& param, bool tp_replicas) {
  FlatParam flat;
  flat.name = param.name;
  flat.numel = size_t(param.tensor.numel());
  flat.tensor_parallel = param.tensor_parallel;
  flat.weight_decay = param.weight_decay;
  flat.counted_on_other_stage = param.counted_on_other_stage;
  flat.own_buckets = param.sparse_gradient;
  flat.tied_copy = param.tied_across_stages;
  flat.exact = tp_replicas && !param.tensor_parallel && !flat.tied_copy;
  return flat;
}

torch::Device device_of_parameters(const std::vector<ParamInfo>& params) {
  const ParamInfo* first = nullptr;
  for (const auto& p : params) {
    if (!p.tensor.defined()) continue;
    if (first == nullptr) {
      first = &p;
    } else if (p.tensor.device() != first->tensor.device()) {
      throw std::invalid_argument("optimizer parameter " + p.name + " is on " +
                                  p.tensor.device().str() + ", " + first->name + " on " +
                                  first->tensor.device().str() + ": all must share one device");
    }
  }
  return first ? first->tensor.device() : torch::Device(torch::kCPU);
}

}  // namespace cmpi::parallel
