#include "trainer/metrics.h"

#include <cmath>
#include <cstdio>
#include <ctime>

namespace cmpi::trainer {

MetricsLog::MetricsLog(const std::string& jsonl_path, int64_t print_every,
                       const std::string& earlier)
    : print_every_(print_every) {
  if (jsonl_path.empty()) return;
  file_.emplace(jsonl_path, io::CheckedFile::Mode::kTruncate);
  if (!earlier.empty()) file_->append(earlier);
}

void MetricsLog::close() {
  if (file_) file_->close();
}

std::string json_number(const char* format, double value, const char* name,
                        std::vector<std::string>& nonfinite) {
  if (!std::isfinite(value)) {
    nonfinite.push_back(name);
    return "null";
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

std::string nonfinite_json(const std::vector<std::string>& nonfinite) {
  if (nonfinite.empty()) return "";
  std::string out = ",\"nonfinite\":[";
  for (size_t i = 0; i < nonfinite.size(); ++i) out += (i ? ",\"" : "\"") + nonfinite[i] + "\"";
  return out + "]";
}

double process_cpu_seconds() {
  timespec t{};
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) != 0) return -1;
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

std::string MetricsLog::to_json(const StepRecord& r) {
  std::vector<std::string> nonfinite;
  const std::string loss = json_number("%.9g", r.loss, "loss", nonfinite);
  const std::string grad_norm = json_number("%.9g", r.grad_norm, "grad_norm", nonfinite);
  char buf[768];
  std::snprintf(buf, sizeof buf,
                "{\"step\":%lld,\"total_steps\":%lld,\"loss\":%s,\"loss_floor\":%.6f,"
                "\"lr\":%.6e,\"grad_norm\":%s,\"skipped\":%s,\"skipped_steps\":%lld,"
                "\"tokens_per_s\":%.1f,\"step_ms\":%.3f,"
                "\"comm_ms\":%.3f,\"raw_bytes\":%llu,\"wire_bytes\":%llu,"
                "\"grad_reduce_ms\":%.3f,\"grad_reduce_exposed_ms\":%.3f,"
                "\"grad_buckets_overlapped\":%lld",
                (long long)r.step, (long long)r.total_steps, loss.c_str(), r.loss_floor, r.lr,
                grad_norm.c_str(), r.skipped ? "true" : "false", (long long)r.skipped_steps,
                r.tokens_per_second, r.step_ms, r.comm_ms, (unsigned long long)r.raw_bytes,
                (unsigned long long)r.wire_bytes, r.grad_reduce_ms, r.grad_reduce_exposed_ms,
                (long long)r.grad_buckets_overlapped);
  std::string out = buf;
  if (r.loss_scale > 0) {
    std::snprintf(buf, sizeof buf, ",\"loss_scale\":%.9g", r.loss_scale);
    out += buf;
  }
  if (r.cpu_ms >= 0) {
    std::snprintf(buf, sizeof buf, ",\"cpu_ms\":%.3f", r.cpu_ms);
    out += buf;
  }
  if (r.accuracy >= 0) {
    std::snprintf(buf, sizeof buf, ",\"accuracy\":%.6f,\"images_per_s\":%.1f", r.accuracy,
                  r.images_per_second);
    out += buf;
  }
  if (r.has_val_loss)
    out += ",\"val_loss\":" + json_number("%.9g", r.val_loss, "val_loss", nonfinite);
  if (r.has_val_loss && r.val_accuracy >= 0) {
    std::snprintf(buf, sizeof buf, ",\"val_accuracy\":%.6f", r.val_accuracy);
    out += buf;
  }
  out += nonfinite_json(nonfinite);
  if (!r.memory_json.empty()) out += ",\"memory\":" + r.memory_json;
  if (!r.groups_json.empty()) out += ",\"groups\":" + r.groups_json;
  if (!r.auto_json.empty()) out += ",\"auto\":" + r.auto_json;
  return out + "}";
}

std::string MetricsLog::progress_line(const StepRecord& r) {
  char floor[48] = "", val_loss[64] = "";
  if (r.loss_floor > 0) std::snprintf(floor, sizeof floor, " (floor %.4f)", r.loss_floor);
  if (r.has_val_loss && r.val_accuracy >= 0)
    std::snprintf(val_loss, sizeof val_loss, " | val_loss %.4f val_acc %.3f", r.val_loss,
                  r.val_accuracy);
  else if (r.has_val_loss)
    std::snprintf(val_loss, sizeof val_loss, " | val_loss %.4f", r.val_loss);
  char throughput[64];
  if (r.accuracy >= 0)
    std::snprintf(throughput, sizeof throughput, "acc %.3f | %.0f img/s", r.accuracy,
                  r.images_per_second);
  else
    std::snprintf(throughput, sizeof throughput, "%.0f tok/s", r.tokens_per_second);
  char buf[640];
  std::snprintf(buf, sizeof buf,
                "step %lld/%lld | loss %.4f%s%s | lr %.2e | %s | step %.1f ms | "
                "comm %.1f ms (grad sync %.1f, exposed %.1f) | sent %s",
                (long long)r.step, (long long)r.total_steps, r.loss, floor, val_loss, r.lr,
                throughput, r.step_ms, r.comm_ms, r.grad_reduce_ms, r.grad_reduce_exposed_ms,
                config::human_bytes(double(r.wire_bytes)).c_str());
  if (!r.skipped) return buf;
  return std::string(buf) + " | SKIPPED: non-finite values, update not applied (" +
         std::to_string(r.skipped_steps) + " skipped so far)";
}

void MetricsLog::record(const StepRecord& r) {
  if (file_) file_->append(to_json(r) + "\n");
  if (print_every_ > 0 && (r.step % print_every_ == 0 || r.step == r.total_steps || r.step == 1 ||
                           r.skipped || r.has_val_loss)) {
    std::printf("%s\n", progress_line(r).c_str());
    std::fflush(stdout);
  }
}

}  // namespace cmpi::trainer
