// Activation recomputation (gradient checkpointing) for LibTorch C++, which
// has no torch.utils.checkpoint: recompute_in_backward(forward, inputs)
// runs `forward` once without recording a graph, so none of its
// intermediate tensors outlive it, and keeps only `inputs`. When backward
// reaches its outputs it runs `forward` again on those inputs with
// gradients recorded and back-propagates the incoming gradients through that
// fresh graph (a reentrant backward), which accumulates into the parameters'
// gradients and returns the inputs' gradients.
//
// The second forward must compute what the first did, bit for bit:
//  - random draws: the states of `generators` (and of LibTorch's default CPU
//    generator, which nn::Dropout draws from) are saved before the first
//    forward, set again around the second and put back afterwards, so every
//    dropout mask is the first one and the generators continue where the
//    step left them;
//  - the same operations on the same values in the same order, so gradients
//    equal the non-recomputed run's in float32 (tests/models/
//    recompute_test.cpp, tests/parallel/recompute_mpi_test.cpp);
//  - communication inside `forward` (tensor-parallel allreduces) happens
//    again: every rank of the group recomputes in the same backward node, so
//    the calls pair up; a lossy tp codec compresses the repeat anew.
// Parameters are read when `forward` runs: per-layer ZeRO-3 has gathered a
// block again before its backward (parallel/zero/zero3_gather_rules.h), which is
// when its recomputation runs.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <vector>

namespace cmpi::models {

using RecomputedForward =
    std::function<torch::autograd::variable_list(const torch::autograd::variable_list&)>;

// Without gradient recording (evaluation) it just calls `forward`. With it,
// inputs that do not require gradients are fine (the parameters' gradients
// are still computed). `generators` are the non-default generators `forward`
// draws from; they and `forward`'s captures must outlive the backward.
torch::autograd::variable_list recompute_in_backward(RecomputedForward forward,
                                                     const torch::autograd::variable_list& inputs,
                                                     std::vector<at::Generator> generators = {});

}  // namespace cmpi::models
