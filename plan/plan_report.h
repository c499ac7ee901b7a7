// How a StepPlan is shown: a table for people, JSON for scripts (the same
// numbers; bytes and seconds per rank and step).
#pragma once

#include <string>
#include <vector>

#include "plan/step_plan.h"

namespace cmpi::plan {

std::string plan_table(const StepPlan& plan, const PlanOptions& options,
                       const std::string& config_source);
std::string plan_json(const StepPlan& plan, const PlanOptions& options);

// The presets side by side and which the planner would choose (the fastest).
std::string presets_table(const std::vector<StepPlan>& plans);
std::string presets_json(const std::vector<StepPlan>& plans);
const StepPlan& fastest(const std::vector<StepPlan>& plans);

}  // namespace cmpi::plan
