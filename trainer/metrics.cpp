#include "trainer/metrics.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "trainer/eta.h"
#include "trainer/flops_meter.h"

namespace cmpi::trainer {

MetricsLog::MetricsLog(const std::string& jsonl_path, int64_t print_every,
                       const std::string& earlier, const std::string& tensorboard_dir,
                       int64_t resumed_after)
    : print_every_(print_every) {
  if (!jsonl_path.empty()) {
    file_.emplace(jsonl_path, io::CheckedFile::Mode::kTruncate);
    if (!earlier.empty()) file_->append(earlier);
  }
  if (!tensorboard_dir.empty()) {
    tensorboard_ = std::make_unique<io::TensorBoardWriter>(tensorboard_dir);
    if (resumed_after > 0) tensorboard_->restart_at(resumed_after + 1);
  }
}

void MetricsLog::close() {
  if (file_) file_->close();
  if (tensorboard_) tensorboard_->close();
}

std::string console_number(const char* format, double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
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

std::optional<double> number_field(const std::string& line, const char* key) {
  const std::string quoted = std::string("\"") + key + "\":";
  const size_t at = line.find(quoted);
  if (at == std::string::npos) return std::nullopt;
  const char* begin = line.c_str() + at + quoted.size();
  if (std::strncmp(begin, "null", 4) == 0) return std::nan("");
  char* end = nullptr;
  const double value = std::strtod(begin, &end);
  if (end == begin) return std::nullopt;
  return value;
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
  // Only the synthetic Markov data has a floor; 0 means none.
  char floor[48] = "";
  if (r.loss_floor > 0) std::snprintf(floor, sizeof floor, "\"loss_floor\":%.6f,", r.loss_floor);
  char buf[768];
  std::snprintf(buf, sizeof buf,
                "{\"step\":%lld,\"total_steps\":%lld,\"loss\":%s,%s"
                "\"lr\":%.6e,\"grad_norm\":%s,\"skipped\":%s,\"skipped_steps\":%lld,"
                "\"tokens_per_s\":%.1f,\"step_ms\":%.3f,"
                "\"comm_ms\":%.3f,\"raw_bytes\":%llu,\"wire_bytes\":%llu,"
                "\"grad_reduce_ms\":%.3f,\"grad_reduce_exposed_ms\":%.3f,"
                "\"grad_buckets_overlapped\":%lld",
                (long long)r.step, (long long)r.total_steps, loss.c_str(), floor, r.lr,
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
  if (r.tflops_per_rank >= 0) {
    std::snprintf(buf, sizeof buf, ",\"tflops_per_rank\":%.6g", r.tflops_per_rank);
    out += buf;
  }
  if (r.mfu >= 0) {
    std::snprintf(buf, sizeof buf, ",\"mfu\":%.6g,\"hfu\":%.6g", r.mfu, r.hfu);
    out += buf;
  }
  if (r.eta_seconds >= 0) {
    std::snprintf(buf, sizeof buf, ",\"eta_s\":%.1f", r.eta_seconds);
    out += buf;
  }
  if (!r.outer_sync.empty()) {
    out += ",\"outer_sync\":[";
    for (size_t i = 0; i < r.outer_sync.size(); ++i)
      out += (i ? "," : "") + std::to_string(r.outer_sync[i]);
    std::snprintf(buf, sizeof buf, "],\"outer_sync_ms\":%.3f", r.outer_sync_ms);
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
  char floor[48] = "";
  if (r.loss_floor > 0) std::snprintf(floor, sizeof floor, " (floor %.4f)", r.loss_floor);
  std::string val_loss;
  if (r.has_val_loss) val_loss = " | val_loss " + console_number("%.4f", r.val_loss);
  if (r.has_val_loss && r.val_accuracy >= 0)
    val_loss += " val_acc " + console_number("%.3f", r.val_accuracy);
  char throughput[64];
  if (r.accuracy >= 0)
    std::snprintf(throughput, sizeof throughput, "acc %.3f | %.0f img/s", r.accuracy,
                  r.images_per_second);
  else
    std::snprintf(throughput, sizeof throughput, "%.0f tok/s", r.tokens_per_second);
  // Per rank: "8.1 GFLOP/s/rank, MFU 21.4%" (HFU too when recomputation
  // makes it differ).
  std::string flops;
  if (r.tflops_per_rank >= 0) flops = " | " + human_flops(r.tflops_per_rank * 1e12) + "/rank";
  if (r.mfu >= 0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, ", MFU %.1f%%", 100 * r.mfu);
    flops += buf;
    if (r.hfu > r.mfu) {
      std::snprintf(buf, sizeof buf, " (HFU %.1f%%)", 100 * r.hfu);
      flops += buf;
    }
  }
  char buf[640];
  std::snprintf(buf, sizeof buf,
                "step %lld/%lld | loss %s%s%s | lr %.2e | %s%s | step %.1f ms | "
                "comm %.1f ms (grad sync %.1f, exposed %.1f) | sent %s",
                (long long)r.step, (long long)r.total_steps, console_number("%.4f", r.loss).c_str(),
                floor, val_loss.c_str(), r.lr, throughput, flops.c_str(), r.step_ms, r.comm_ms,
                r.grad_reduce_ms, r.grad_reduce_exposed_ms,
                config::human_bytes(double(r.wire_bytes)).c_str());
  std::string line = buf;
  if (!r.outer_sync.empty()) {
    line += " | outer sync";
    for (int f : r.outer_sync) line += " f" + std::to_string(f);
    std::snprintf(buf, sizeof buf, " (%.1f ms)", r.outer_sync_ms);
    line += buf;
  }
  if (r.eta_seconds >= 0 && r.step < r.total_steps)
    line += " | ETA " + format_duration(r.eta_seconds);
  if (!r.skipped) return line;
  return line + " | SKIPPED: non-finite values, update not applied (" +
         std::to_string(r.skipped_steps) + " skipped so far)";
}

io::TensorBoardWriter::Scalars MetricsLog::scalars(const StepRecord& r) {
  io::TensorBoardWriter::Scalars out{{"loss", r.loss}, {"lr", r.lr}, {"grad_norm", r.grad_norm}};
  if (r.has_val_loss) out.emplace_back("val_loss", r.val_loss);
  if (r.accuracy >= 0) {
    out.emplace_back("accuracy", r.accuracy);
    out.emplace_back("images_per_s", r.images_per_second);
  } else {
    out.emplace_back("tokens_per_s", r.tokens_per_second);
  }
  if (r.has_val_loss && r.val_accuracy >= 0) out.emplace_back("val_accuracy", r.val_accuracy);
  if (r.loss_scale > 0) out.emplace_back("loss_scale", r.loss_scale);
  if (r.tflops_per_rank >= 0) out.emplace_back("tflops_per_rank", r.tflops_per_rank);
  if (r.mfu >= 0) {
    out.emplace_back("mfu", r.mfu);
    out.emplace_back("hfu", r.hfu);
  }
  out.emplace_back("step_ms", r.step_ms);
  out.emplace_back("comm_ms", r.comm_ms);
  for (const GroupTraffic& g : r.group_traffic) {
    out.emplace_back("groups/" + g.name + "/ratio", g.ratio);
    out.emplace_back("groups/" + g.name + "/sent_MB", double(g.wire_bytes) / 1e6);
  }
  return out;
}

void MetricsLog::record(const StepRecord& r) {
  if (file_) file_->append(to_json(r) + "\n");
  if (tensorboard_) tensorboard_->add_scalars(r.step, scalars(r));
  if (print_every_ > 0 && (r.step % print_every_ == 0 || r.step == r.total_steps || r.step == 1 ||
                           r.skipped || r.has_val_loss)) {
    std::printf("%s\n", progress_line(r).c_str());
    std::fflush(stdout);
  }
}

}  // namespace cmpi::trainer
