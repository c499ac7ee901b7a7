// Where a model's forward meets a LayerGate (layer_schedule.h): enter_use and
// leave_use call the gate's forward side at once and put an identity
// autograd node on the tensor passing by, whose backward calls the gate's
// backward side: leave_use's node runs before any gradient of the use (the
// use's output gradient arrives there first), enter_use's once the use's
// input gradient is computed. A null gate, or no gradient to track, leaves
// the tensor as it is.
#pragma once

#include <torch/torch.h>

#include "parallel/zero/layer_schedule.h"

namespace cmpi::parallel {

// Before use `use` reads its parameters; `input` is what flows into it
// (undefined or integer ids at the first use: nothing to hook).
torch::Tensor enter_use(LayerGate* gate, size_t use, const torch::Tensor& input);
// After use `use`; `output` is what flows out of it.
torch::Tensor leave_use(LayerGate* gate, size_t use, const torch::Tensor& output);

}  // namespace cmpi::parallel
