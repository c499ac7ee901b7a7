#include "parallel/zero/flat_param.h"

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

}  // namespace cmpi::parallel
