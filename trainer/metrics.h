// Metrics: what a run reports. Every step becomes one JSON object appended to
// <run dir>/metrics.jsonl, one checked write(2) per record (a full disk or any
// other write error throws io::FileError naming the file); every `every` steps
// (and the last, every skipped one and every one with a validation loss,
// "val_loss") a one-line progress report goes to stdout. Written by rank 0
// only. Loss and gradient norm are written with 9 significant digits, enough
// to tell any two float values apart (runs can be compared bit for bit).
//
// Every line is valid JSON: a non-finite loss or grad_norm (NaN, +-Inf) is
// written as null, and the line then names those fields in
// "nonfinite":["loss","grad_norm"] (the key is absent when all are finite).
// "skipped" says whether the step's update was not applied (non-finite loss
// or gradients, see training.on_nonfinite), "skipped_steps" how many steps
// so far were.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/units.h"
#include "io/checked_file.h"

namespace cmpi::trainer {

struct StepRecord {
  int64_t step = 0;  // 1-based
  int64_t total_steps = 0;
  double loss = 0;
  double loss_floor = 0;      // the data's entropy rate (nats/token); 0: unknown (real text)
  bool has_val_loss = false;  // evaluated after this step (eval.every)
  double val_loss = 0;
  double lr = 0;
  double grad_norm = 0;
  double tokens_per_second = 0;
  // Classifiers (model.kind resnet): the share of the step's images whose
  // arg-max class was right, and images per second; accuracy < 0 for a GPT,
  // which then reports tokens per second instead.
  double accuracy = -1;
  double images_per_second = 0;
  double val_accuracy = -1;  // with has_val_loss, classifiers only
  double step_ms = 0;
  double comm_ms = 0;  // this rank's time inside communicators during the step
  // CPU time this process (all its threads) used during the step; below
  // step_ms where the rank waited without spinning or shared its core with
  // other processes. Negative: not measured.
  double cpu_ms = -1;
  // The gradient bucket collectives (part of comm_ms): their total time, on
  // the comm thread when they overlap backward, and what of it the step still
  // waited for after backward. Without overlap the two are equal.
  double grad_reduce_ms = 0;
  double grad_reduce_exposed_ms = 0;
  int64_t grad_buckets_overlapped = 0;  // buckets launched during backward
  bool skipped = false;                 // the update was not applied (non-finite values)
  int64_t skipped_steps = 0;            // so far, this step included
  double loss_scale = 0;                // fp16: the loss scale the step ran with; 0: none
  uint64_t raw_bytes = 0;               // what the step asked to send, all groups
  uint64_t wire_bytes = 0;              // what actually went on the wire, all groups
  std::string groups_json;              // {"dp":{...},...} cumulative per-group stats
  std::string memory_json;              // {"parameters_bytes":...,...} or empty
  std::string auto_json;                // preset auto: trainer/auto_report.h; else empty
};

class MetricsLog {
 public:
  // jsonl_path empty: no file. print_every 0: no progress lines. `earlier`:
  // records of earlier steps to start the file with (a resumed run's).
  MetricsLog(const std::string& jsonl_path, int64_t print_every, const std::string& earlier = "");
  // Closes the file without reporting errors (an exception is unwinding):
  // a run that ends normally calls close().
  ~MetricsLog() = default;
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;

  void record(const StepRecord& r);
  // Forces metrics.jsonl to storage and closes it; throws io::FileError if
  // that fails (a full disk may be reported only here).
  void close();

  static std::string to_json(const StepRecord& r);
  static std::string progress_line(const StepRecord& r);

 private:
  std::optional<io::CheckedFile> file_;
  int64_t print_every_;
};

// `value` printed with the printf `format` for one number, or null when it is
// NaN or infinite (JSON has no such numbers); then `name` is appended to
// `nonfinite`.
std::string json_number(const char* format, double value, const char* name,
                        std::vector<std::string>& nonfinite);
// ,"nonfinite":["a","b"] or "" when the list is empty.
std::string nonfinite_json(const std::vector<std::string>& nonfinite);

// CPU time this process has used so far (all threads), seconds; -1 if the
// clock is unavailable.
double process_cpu_seconds();

}  // namespace cmpi::trainer
