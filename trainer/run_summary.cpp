#include "trainer/run_summary.h"

#include <sys/resource.h>

#include <cstdio>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "io/atomic_file.h"
#include "parallel/mesh/process_groups.h"
#include "trainer/flops_meter.h"
#include "trainer/metrics.h"

namespace cmpi::trainer {
namespace {

struct GroupTotals {
  unsigned long long calls = 0, raw_bytes = 0, wire_bytes = 0, intra_wire = 0, inter_wire = 0,
                     nonfinite_raw_chunks = 0;
  double max_seconds = 0, max_encode = 0, max_decode = 0;
};

// Control calls of the world communicator: they leave every group's stats,
// these totals included, as the run left them.
GroupTotals reduce_over_world(comm::Communicator& world, const comm::OpCounters& mine) {
  uint64_t count_sums[6] = {mine.calls,
                            mine.raw_bytes,
                            mine.wire_bytes,
                            mine.intra_wire_bytes,
                            mine.inter_wire_bytes,
                            mine.nonfinite_raw_chunks};
  double time_max[3] = {mine.seconds, mine.encode_seconds, mine.decode_seconds};
  GroupTotals t;
  world.control_allreduce(count_sums, 6, comm::ControlReduce::kSum);
  world.control_allreduce(time_max, 3, comm::ControlReduce::kMax);
  t.calls = count_sums[0];
  t.raw_bytes = count_sums[1];
  t.wire_bytes = count_sums[2];
  t.intra_wire = count_sums[3];
  t.inter_wire = count_sums[4];
  t.nonfinite_raw_chunks = count_sums[5];
  t.max_seconds = time_max[0];
  t.max_encode = time_max[1];
  t.max_decode = time_max[2];
  return t;
}

// This process's peak resident set so far (Linux reports ru_maxrss in KiB).
long long max_rss_bytes() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return (long long)usage.ru_maxrss * 1024;
}

// Per pipeline stage, the largest over its ranks of the optimizer's peak
// state (parameters, gradients, moments, staging) and of the peak resident
// set: what the planner's memory column projects (docs/planner.md).
std::string memory_by_stage_json(parallel::ProcessGroups& groups, const TrainResult& result) {
  const int stages = groups.dims().pp;
  constexpr size_t kFields = 3;
  std::vector<int64_t> most(kFields * size_t(stages), 0);
  const size_t stage = size_t(groups.coord().pp);
  most[kFields * stage] = result.peak_state_bytes;
  most[kFields * stage + 1] = max_rss_bytes();
  most[kFields * stage + 2] = result.peak_device_allocated_bytes;
  groups.world().control_allreduce(most.data(), most.size(), comm::ControlReduce::kMax);
  std::string json = ",\"memory\":{\"stages\":[";
  char buf[224];
  for (size_t s = 0; s < size_t(stages); ++s) {
    std::snprintf(buf, sizeof buf,
                  "%s{\"stage\":%zu,\"peak_state_bytes\":%lld,\"max_rss_bytes\":%lld", s ? "," : "",
                  s, (long long)most[kFields * s], (long long)most[kFields * s + 1]);
    json += buf;
    // A GPU run: the CUDA caching allocator's peak on the stage's devices.
    if (most[kFields * s + 2] > 0) {
      std::snprintf(buf, sizeof buf, ",\"max_device_allocated_bytes\":%lld",
                    (long long)most[kFields * s + 2]);
      json += buf;
    }
    json += "}";
  }
  return json + "]}";
}

// The run's attempts (trainer/attempt_log.h): all of them in "steps",
// "seconds", "attempts" and "restarts"; a resumed launch adds what it did
// itself.
std::string history_json(const TrainResult& result) {
  const RunHistory& h = result.history;
  char buf[256];
  std::snprintf(buf, sizeof buf, ",\"attempts\":%lld,\"restarts\":%lld,\"wall_seconds\":%.3f",
                (long long)h.attempts, (long long)(h.attempts - 1), h.wall_seconds);
  std::string json = buf;
  if (h.steps_before > 0) {
    std::snprintf(buf, sizeof buf,
                  ",\"resumed_from_step\":%lld,\"steps_this_attempt\":%zu,"
                  "\"seconds_this_attempt\":%.3f",
                  (long long)h.steps_before, result.losses.size(), result.seconds);
    json += buf;
  }
  return json;
}

// Model FLOPs and utilisation per rank (trainer/flops_meter.h), and the
// console's words for them; nothing for a model without a FLOP count.
std::string utilization_json(const RunUtilization& u, std::string& text) {
  if (u.tflops_per_rank < 0) return "";
  char buf[384];
  std::snprintf(buf, sizeof buf, ",\"forward_flops_per_token\":%.6g,\"tflops_per_rank\":%.6g",
                u.flops_per_token, u.tflops_per_rank);
  std::string json = buf;
  text = " | " + human_flops(u.tflops_per_rank * 1e12) + "/rank";
  if (u.mfu < 0) return json;
  std::snprintf(buf, sizeof buf,
                ",\"mfu\":%.6g,\"hfu\":%.6g,\"peak_flops\":%.6g,\"peak_source\":\"%s\"", u.mfu,
                u.hfu, u.peak_flops, u.peak_source.c_str());
  json += buf;
  std::snprintf(buf, sizeof buf, ", MFU %.1f%%", 100 * u.mfu);
  text += buf;
  if (u.hfu > u.mfu) {
    std::snprintf(buf, sizeof buf, " (HFU %.1f%%)", 100 * u.hfu);
    text += buf;
  }
  text += " of " + human_flops(u.peak_flops) + " (" + u.peak_source + ")";
  return json;
}

}  // namespace

void report_summary(const config::Config& config, parallel::ProcessGroups& groups,
                    const TrainResult& result, const std::string& run_dir) {
  const bool is_root = groups.world_rank() == 0;
  const RunHistory& history = result.history;
  const double final_loss = result.losses.empty() ? 0.0 : result.losses.back();
  // A resumed run's first loss is step 1's, from the earlier attempts' records.
  const double first_loss = history.has_first_loss  ? history.first_loss
                            : result.losses.empty() ? 0.0
                                                    : result.losses.front();
  const int64_t steps = history.steps_before + int64_t(result.losses.size());
  // A NaN loss is written as null and named in "nonfinite" (metrics.h).
  std::vector<std::string> nonfinite;
  const std::string first_json = json_number("%.6f", first_loss, "first_loss", nonfinite);
  const std::string final_json = json_number("%.6f", final_loss, "final_loss", nonfinite);
  // Only the synthetic Markov data has a floor (0: none, e.g. real text).
  char floor_json[48] = "";
  if (result.loss_floor > 0)
    std::snprintf(floor_json, sizeof floor_json, ",\"loss_floor\":%.6f", result.loss_floor);
  std::string json;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "{\"steps\":%lld,\"first_loss\":%s,\"final_loss\":%s%s,"
                "\"skipped_steps\":%lld,\"seconds\":%.3f,\"tokens_per_s\":%.1f,"
                "\"parameters\":%lld,\"layout\":\"%s\"",
                (long long)steps, first_json.c_str(), final_json.c_str(), floor_json,
                (long long)result.skipped_steps, history.seconds, result.tokens_per_second,
                (long long)result.parameters, groups.dims().to_string().c_str());
  json = buf;
  json += history_json(result);
  std::string flops_text;
  json += utilization_json(result.utilization, flops_text);
  std::snprintf(buf, sizeof buf, ",\"precision\":\"%s\"",
                config::name_of(config.training.precision));
  json += buf;
  if (result.loss_scale > 0) {
    std::snprintf(buf, sizeof buf, ",\"loss_scale\":%.9g,\"overflow_steps\":%lld",
                  result.loss_scale, (long long)result.overflow_steps);
    json += buf;
  }
  std::string throughput = std::to_string(int64_t(result.tokens_per_second)) + " tok/s";
  if (!result.accuracies.empty()) {
    std::snprintf(buf, sizeof buf, ",\"final_accuracy\":%.6f,\"images_per_s\":%.1f",
                  result.accuracies.back(), result.images_per_second);
    json += buf;
    std::snprintf(buf, sizeof buf, "acc %.3f | %.0f img/s", result.accuracies.back(),
                  result.images_per_second);
    throughput = buf;
  }
  if (!result.val_accuracies.empty()) {
    std::snprintf(buf, sizeof buf, ",\"val_accuracy\":%.6f", result.val_accuracies.back().second);
    json += buf;
  }
  std::string val_text;
  if (!result.val_losses.empty()) {
    auto [first_step, first_val] = result.val_losses.front();
    if (history.has_first_val_loss) {
      first_step = history.first_val_step;
      first_val = history.first_val_loss;
    }
    const auto& [last_step, last_val] = result.val_losses.back();
    json += ",\"first_val_loss\":" + json_number("%.6f", first_val, "first_val_loss", nonfinite) +
            ",\"first_val_step\":" + std::to_string(first_step) +
            ",\"val_loss\":" + json_number("%.6f", last_val, "val_loss", nonfinite) +
            ",\"val_step\":" + std::to_string(last_step);
    std::snprintf(buf, sizeof buf, " | val_loss %s (step %lld) -> %s (step %lld)",
                  console_number("%.4f", first_val).c_str(), (long long)first_step,
                  console_number("%.4f", last_val).c_str(), (long long)last_step);
    val_text = buf;
  }
  json += nonfinite_json(nonfinite) + memory_by_stage_json(groups, result) + ",\"groups\":{";
  std::string lines;
  bool first = true;
  for (auto kind : comm::kAllGroupKinds) {
    const GroupTotals t = reduce_over_world(groups.world(), groups.group(kind).stats().total());
    if (t.calls == 0) continue;
    const double ratio = t.wire_bytes ? double(t.raw_bytes) / double(t.wire_bytes) : 1.0;
    std::snprintf(buf, sizeof buf,
                  "%s\"%s\":{\"calls\":%llu,\"raw_bytes\":%llu,\"wire_bytes\":%llu,"
                  "\"intra_wire_bytes\":%llu,\"inter_wire_bytes\":%llu,"
                  "\"ratio\":%.4f,\"max_seconds\":%.4f,\"max_encode_s\":%.4f,"
                  "\"max_decode_s\":%.4f,\"nonfinite_raw_chunks\":%llu}",
                  first ? "" : ",", comm::to_string(kind), t.calls, t.raw_bytes, t.wire_bytes,
                  t.intra_wire, t.inter_wire, ratio, t.max_seconds, t.max_encode, t.max_decode,
                  t.nonfinite_raw_chunks);
    json += buf;
    first = false;
    std::snprintf(buf, sizeof buf,
                  "  %-5s %8llu calls | raw %10s | wire %10s (intra %s, inter %s) | ratio %5.2f "
                  "| comm %.2f s (slowest rank)\n",
                  comm::to_string(kind), t.calls, config::human_bytes(double(t.raw_bytes)).c_str(),
                  config::human_bytes(double(t.wire_bytes)).c_str(),
                  config::human_bytes(double(t.intra_wire)).c_str(),
                  config::human_bytes(double(t.inter_wire)).c_str(), ratio, t.max_seconds);
    lines += buf;
    if (t.nonfinite_raw_chunks > 0) {
      std::snprintf(buf, sizeof buf,
                    "        %llu codec chunks sent raw because they held NaN or infinity\n",
                    t.nonfinite_raw_chunks);
      lines += buf;
    }
  }
  json += "}}";
  if (!is_root) return;
  char floor[64] = "";
  if (result.loss_floor > 0)
    std::snprintf(floor, sizeof floor, " (floor %.4f, gap %.4f)", result.loss_floor,
                  final_loss - result.loss_floor);
  // A resumed launch: "8 steps (2 this launch, from step 6) in 3.1 s over 2 attempts".
  std::string launch_text, attempts_text;
  if (history.steps_before > 0)
    launch_text = " (" + std::to_string(result.losses.size()) + " this launch, from step " +
                  std::to_string(history.steps_before) + ")";
  if (history.attempts > 1)
    attempts_text = " over " + std::to_string(history.attempts) + " attempts";
  std::printf("done: %lld steps%s in %.1f s%s | loss %s -> %s%s%s | %s%s | %lld skipped steps\n",
              (long long)steps, launch_text.c_str(), history.seconds, attempts_text.c_str(),
              console_number("%.4f", first_loss).c_str(),
              console_number("%.4f", final_loss).c_str(), floor, val_text.c_str(),
              throughput.c_str(), flops_text.c_str(), (long long)result.skipped_steps);
  std::printf("communication (summed over ranks):\n%s", lines.empty() ? "  none\n" : lines.c_str());
  if (!run_dir.empty()) {
    // Throws (and main aborts the job) if the summary cannot be written, so
    // the line below lists only files that are complete on storage.
    io::write_file_atomically(run_dir + "/summary.json", json + "\n");
    std::string files;
    for (const auto& name : result.run_files) files += name + ", ";
    std::printf("run directory: %s (%ssummary.json)\n", run_dir.c_str(), files.c_str());
  }
  std::fflush(stdout);
}

}  // namespace cmpi::trainer
