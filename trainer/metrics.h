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
// so far were. On the console a non-finite value reads nan, inf or -inf.
//
// A GPT's records also say what the step's time means in FLOPs, per rank
// (trainer/flops_meter.h): "tflops_per_rank", "mfu" and "hfu" (fractions of
// the peak), and "eta_s", the estimated seconds to the end of the run
// (trainer/eta.h). "loss_floor" is written only where the data has one
// (the Markov chain's entropy rate; real text has none).
//
// With a TensorBoard folder (log.tensorboard) every record also becomes one
// event of scalars there (io/tensorboard_writer.h), named as the JSON keys:
// see MetricsLog::scalars.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/units.h"
#include "io/checked_file.h"
#include "io/tensorboard_writer.h"

namespace cmpi::trainer {

// One communicator group's traffic so far: raw / wire bytes, and the bytes
// that went on the wire.
struct GroupTraffic {
  std::string name;
  double ratio = 1;
  uint64_t wire_bytes = 0;
};

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
  // parallel.dp_sync: diloco: the fragments synchronised after this step
  // (empty: none) and the sync's time.
  std::vector<int> outer_sync;
  double outer_sync_ms = 0;
  // Per rank, from the model's FLOPs (trainer/flops_meter.h): model TFLOP/s,
  // MFU and HFU as fractions of the peak; negative: not counted (a ResNet;
  // MFU and HFU also when no peak is known).
  double tflops_per_rank = -1;
  double mfu = -1;
  double hfu = -1;
  double eta_seconds = -1;  // to the end of the run; negative: not known yet
  // Every group in groups_json, cumulative like it (TensorBoard's
  // groups/<name>/ratio and groups/<name>/sent_MB).
  std::vector<GroupTraffic> group_traffic;
};

class MetricsLog {
 public:
  // jsonl_path empty: no file. print_every 0: no progress lines. `earlier`:
  // records of earlier steps to start the file with (a resumed run's).
  // tensorboard_dir empty: no event file; else one there, which after
  // `resumed_after` > 0 steps marks a restart at the next step.
  MetricsLog(const std::string& jsonl_path, int64_t print_every, const std::string& earlier = "",
             const std::string& tensorboard_dir = "", int64_t resumed_after = 0);
  // Closes the file without reporting errors (an exception is unwinding):
  // a run that ends normally calls close().
  ~MetricsLog() = default;
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;

  void record(const StepRecord& r);
  // Forces metrics.jsonl (and the event file) to storage and closes it;
  // throws io::FileError if that fails (a full disk may be reported only
  // here).
  void close();
  // The event file's path; empty without one.
  std::string tensorboard_path() const { return tensorboard_ ? tensorboard_->path() : ""; }

  static std::string to_json(const StepRecord& r);
  static std::string progress_line(const StepRecord& r);
  // The record's TensorBoard scalars, tagged as its JSON keys: loss,
  // val_loss, lr, grad_norm, tokens_per_s (images_per_s, accuracy and
  // val_accuracy for classifiers), loss_scale, tflops_per_rank, mfu, hfu,
  // step_ms, comm_ms, and per group groups/<name>/ratio and
  // groups/<name>/sent_MB (its wire_bytes / 1e6). Values the record does not
  // hold are left out.
  static io::TensorBoardWriter::Scalars scalars(const StepRecord& r);

 private:
  std::optional<io::CheckedFile> file_;
  std::unique_ptr<io::TensorBoardWriter> tensorboard_;
  int64_t print_every_;
};

// A number for the console: printf's `format`, or nan, inf, -inf (printf
// writes a NaN's sign, "-nan", which reads like a negative number).
std::string console_number(const char* format, double value);

// `value` printed with the printf `format` for one number, or null when it is
// NaN or infinite (JSON has no such numbers); then `name` is appended to
// `nonfinite`.
std::string json_number(const char* format, double value, const char* name,
                        std::vector<std::string>& nonfinite);
// ,"nonfinite":["a","b"] or "" when the list is empty.
std::string nonfinite_json(const std::vector<std::string>& nonfinite);

// The number a one-line JSON record (metrics.jsonl, attempts.jsonl) holds
// at "key": (null reads as NaN); nullopt when the key is absent.
std::optional<double> number_field(const std::string& line, const char* key);

// CPU time this process has used so far (all threads), seconds; -1 if the
// clock is unavailable.
double process_cpu_seconds();

}  // namespace cmpi::trainer
