#include "trainer/step_report.h"

#include <cstdio>

#include "comm/communicator.h"
#include "parallel/mesh/process_groups.h"
#include "parallel/zero/data_parallel_optimizer.h"
#include "trainer/metrics.h"

namespace cmpi::trainer {
comm::OpCounters comm_totals(parallel::ProcessGroups& groups, const ExtraGroupStats& extra) {
  comm::OpCounters sum;
  for (auto kind : comm::kAllGroupKinds) sum += groups.group(kind).stats().total();
  for (const auto& [name, stats] : extra) sum += stats->total();
  return sum;
}

std::string groups_json(parallel::ProcessGroups& groups, const ExtraGroupStats& extra) {
  std::string out = "{";
  const auto add = [&](const std::string& name, const comm::CommStats& stats) {
    if (stats.total().calls == 0) return;
    out += (out.size() > 1 ? ",\"" : "\"") + name + "\":" + stats.to_json();
  };
  for (auto kind : comm::kAllGroupKinds) add(comm::to_string(kind), groups.group(kind).stats());
  for (const auto& [name, stats] : extra) add(name, *stats);
  return out + "}";
}

std::vector<GroupTraffic> group_traffic(parallel::ProcessGroups& groups,
                                        const ExtraGroupStats& extra) {
  std::vector<GroupTraffic> out;
  const auto add = [&](const std::string& name, const comm::CommStats& stats) {
    const comm::OpCounters total = stats.total();
    if (total.calls == 0) return;
    out.push_back({name, total.ratio(), total.wire_bytes});
  };
  for (auto kind : comm::kAllGroupKinds) add(comm::to_string(kind), groups.group(kind).stats());
  for (const auto& [name, stats] : extra) add(name, *stats);
  return out;
}

void record_step_traffic(StepRecord& record, const comm::OpCounters& before,
                         const comm::OpCounters& after,
                         const parallel::DataParallelOptimizer& optimizer) {
  record.comm_ms = (after.seconds - before.seconds) * 1e3;
  record.raw_bytes = after.raw_bytes - before.raw_bytes;
  record.wire_bytes = after.wire_bytes - before.wire_bytes;
  const auto reduction = optimizer.last_reduction();
  record.grad_reduce_ms = reduction.total_seconds * 1e3;
  record.grad_reduce_exposed_ms = reduction.exposed_seconds * 1e3;
  record.grad_buckets_overlapped = reduction.launched_during_backward;
}

std::string optimizer_memory_json(const parallel::DataParallelOptimizer& optimizer,
                                  const std::string& extra_key, int64_t extra_bytes) {
  const auto m = optimizer.memory();
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "{\"zero_stage\":%d,\"parameters_bytes\":%lld,\"gradients_bytes\":%lld,"
                "\"optimizer_bytes\":%lld,\"buffer_bytes\":%lld,\"peak_bytes\":%lld,"
                "\"%s\":%lld}",
                optimizer.zero_stage(), (long long)m.parameter_bytes, (long long)m.gradient_bytes,
                (long long)m.optimizer_bytes, (long long)m.buffer_bytes,
                (long long)optimizer.peak_bytes(), extra_key.c_str(), (long long)extra_bytes);
  return buf;
}

}  // namespace cmpi::trainer
