// Step reporting of the training loop: the parts of a step's
// record that come from the communicators (time, bytes, per-group stats) and
// from the optimizer (gradient reduction times, state memory), so that every
// model family writes the same metrics.jsonl fields the same way.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "comm/comm_stats.h"
#include "models/train_model.h"
#include "trainer/metrics.h"

namespace cmpi::parallel {
class DataParallelOptimizer;
class ProcessGroups;
}  // namespace cmpi::parallel

namespace cmpi::trainer {

// Communicators outside the process grid that a model also reports.
using models::ExtraGroupStats;

// What this rank's communicators moved so far, every group and the extras.
comm::OpCounters comm_totals(parallel::ProcessGroups& groups, const ExtraGroupStats& extra = {});

// {"dp":{...},"tp":{...},...}: the cumulative stats of every group that moved
// anything, then the extras that did.
std::string groups_json(parallel::ProcessGroups& groups, const ExtraGroupStats& extra = {});

// The same groups' cumulative ratio and wire bytes (StepRecord::group_traffic).
std::vector<GroupTraffic> group_traffic(parallel::ProcessGroups& groups,
                                        const ExtraGroupStats& extra = {});

// Fills the record's communication fields (comm_ms, raw and wire bytes) from
// the totals before and after the step, and its gradient-reduction fields
// from the optimizer's last reduction.
void record_step_traffic(StepRecord& record, const comm::OpCounters& before,
                         const comm::OpCounters& after,
                         const parallel::DataParallelOptimizer& optimizer);

// {"zero_stage":..,"parameters_bytes":..,...,"peak_bytes":..,"<extra_key>":..}:
// the optimizer's state now and at its peak, plus one trainer-specific figure.
std::string optimizer_memory_json(const parallel::DataParallelOptimizer& optimizer,
                                  const std::string& extra_key, int64_t extra_bytes);

}  // namespace cmpi::trainer
