// `cmpi-train --plan`: projects a run instead of training it (plan/), on one
// process, for the world size the user names. Prints the plan table (and,
// with --compare-presets, every preset side by side); writes JSON on request.
#pragma once

#include "config/config.h"
#include "parallel/mesh/parallel_dims.h"
#include "trainer/cli_args.h"

namespace cmpi::trainer {

// The ranks to plan for: --plan-ranks, else the product of the config's
// layout (which needs parallel.data set). Throws UsageError otherwise.
int plan_world_size(const PlanArgs& plan, const config::Config& config);

// Returns the process exit code.
int run_plan(const PlanArgs& plan, const config::Config& config,
             const parallel::ParallelDims& dims);

}  // namespace cmpi::trainer
