// flat_param_of: the flat layout's view of one parameter (FlatParam,
// zero_layout.h) from what the model says of it (ParamInfo, param_info.h).
// One reading of the flags for both layouts cut from parameters: the
// optimizer's gradient buckets (zero_optimizer.cpp) and DiLoCo's
// pseudo-gradient buckets (parallel/diloco/diloco_sync.cpp).
#pragma once

#include <torch/torch.h>

#include <vector>

#include "parallel/param_info.h"
#include "parallel/zero/zero_layout.h"

namespace cmpi::parallel {

// tp_replicas: tp > 1, so every parameter that is not tensor_parallel is held
// whole by every tp rank and is reduced exactly (never through the policy),
// in buckets of its own kind; the tied table (tied_across_stages) is apart
// from those, as the first stage reduces it and hands it to the last.
FlatParam flat_param_of(const ParamInfo& param, bool tp_replicas);

// The one device every defined parameter lives on (the CPU for none);
// throws std::invalid_argument naming the first parameter on another.
torch::Device device_of_parameters(const std::vector<ParamInfo>& params);

}  // namespace cmpi::parallel
