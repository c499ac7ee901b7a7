// A plan's hardware from the profiles (`--plan-device`, `--plan-cluster`):
// the one place that turns a device and a cluster profile into PlanOptions,
// so that `cmpi-train --plan` and the validation against published runs
// (tests/plan/published_runs_test.cpp) plan the same machine.
#pragma once

#include <string>

#include "plan/cluster_profile.h"
#include "plan/device_profile.h"
#include "plan/software_stack.h"
#include "plan/step_plan.h"

namespace cmpi::plan {

// The ranks run on `device`; `attention` is "flash", "materialized" or empty
// (flash where the device has the kernel). Throws std::invalid_argument for
// flash on a device without the kernel.
void use_device(PlanOptions& options, const DeviceProfile& device, const std::string& attention);

// The device's kernels come from `stack` (plan/software_stack.h): its
// kernel efficiency divides every kernel time of the device model.
void use_stack(PlanOptions& options, const SoftwareStack& stack);

// The ranks are placed `devices_per_node` to a node on the cluster's links.
void use_cluster(PlanOptions& options, const ClusterProfile& cluster);

// "a100-80gb: fp16 312 TFLOP/s peak, 80 GB at 2.04 TB/s, attention materialized",
// then ", stack gpt-neox: x 0.82 of the kernels' throughput" for a stack
// other than the reference one.
std::string describe_device(const PlanOptions& options, config::Precision precision);

}  // namespace cmpi::plan
