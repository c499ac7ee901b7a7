// The software stack a planned run's kernels come from (`--plan-stack`): the
// same GPU, model and layout run at different speeds on different training
// code bases, through their kernels (which GEMM shapes and algorithms they
// pick), what they fuse (bias + activation, softmax, dropout + residual), and
// the framework's own time between kernels (launches, Python, the pipeline
// engine's bookkeeping). The plan does not see those parts one by one; a
// stack carries one number for all of them: the fraction of the device
// profile's kernel throughput (plan/device_profile.h) that stack reaches.
// Every kernel time of the device model (plan/device_compute.h: GEMMs, the
// attention core, the elementwise passes, the optimizer's step) is divided
// by it; links, codecs and the schedule are the plan's as before.
//
// The device profiles' GEMM table was fitted on Megatron-LM's own runs, so
// `megatron` is 1 by definition and the default. The other stacks' numbers
// are each fitted on one published run, named in `fitted_on`, and checked on
// the others of that stack (docs/planner.md, "Validation against published
// runs"; tests/plan/published_runs_test.cpp).
#pragma once

#include <string>
#include <vector>

namespace cmpi::plan {

struct SoftwareStack {
  std::string name = "megatron";
  // Of the device profile's kernel throughput, what this stack reaches
  // (0 < kernel_efficiency <= 1 for the built-in ones).
  double kernel_efficiency = 1.0;
  // What it stands for, for the plan's line and docs/planner.md.
  std::string description = "Megatron-LM (NVIDIA), the kernels the device table was fitted on";
  // The published run its number was fitted on ("" for megatron: the device
  // table itself).
  std::string fitted_on;

  bool is_reference() const { return kernel_efficiency == 1.0; }
};

// The built-in stacks' names, in the order --help lists them.
std::vector<std::string> builtin_stack_names();

// A built-in stack by name (case-insensitive). Throws std::invalid_argument
// naming --plan-stack and listing the known stacks for any other name.
SoftwareStack load_software_stack(const std::string& name);

}  // namespace cmpi::plan
