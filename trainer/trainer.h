// Trainer: the one training loop of a rank, for every model family. It
// composes, it does not contain:
//   - the model comes from its family's parallelize function
//     (models/gpt_parallelize.h, models/cnn/resnet_parallelize.h) as a
//     TrainModel (models/train_model.h), which runs one step's micro-batches
//     forward and backward, reduces, clips and applies the update;
//   - a CheckpointManager (checkpoint/checkpoint_manager.h) is handed the
//     model's checkpoint parts, restores --resume and saves every
//     checkpoint.every steps;
//   - the loop itself owns the step numbering, the learning-rate schedule,
//     preset auto's step-boundary decisions, the NonfiniteGuard (a step whose
//     loss or gradients went non-finite is never applied; all ranks agree on
//     it and skip it or stop together, training.on_nonfinite), evaluation
//     every eval.every steps, and the step report: rank 0 prints progress and
//     appends metrics.jsonl (and, with log.tensorboard, an event file's
//     scalars), each step's per-rank FLOP rates and MFU (flops_meter.h) and
//     ETA (eta.h) among them; the run's launches go to attempts.jsonl
//     (attempt_log.h) so that the summary covers all of them.
//
// The header is torch-free (the model lives behind Impl), so the CLI and
// tests that only drive a run compile without LibTorch.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"

namespace cmpi::parallel {
class ProcessGroups;
}
namespace cmpi::data {
class TokenSource;
}
namespace cmpi::comm {
class Watchdog;
}

namespace cmpi::trainer {

struct TrainerOptions {
  std::string run_dir;           // empty: write no files
  std::string resolved_config;   // written to <run_dir>/config.yaml
  int64_t print_every = -1;      // -1: log.every from the config; 0: silent
  std::string dump_tensors_dir;  // non-empty: after the last step, write
                                 // gradients.f32 and activations.f32 there
  // GPT: the sequences to train and evaluate on; null: the config's data is
  // opened here (data::open_token_source, collective over the world).
  std::shared_ptr<const data::TokenSource> source;
  // The session's watchdog (comm/watchdog.h), told the step now running so
  // that an expired deadline names it; null: none (tests).
  comm::Watchdog* watchdog = nullptr;
  // A complete checkpoint directory to continue from (resolved: see
  // resolve_resume_path); empty: start at step 0.
  std::string resume_path;
  // Tests only (trainer/injected_kill.h): world rank `kill_rank` raises
  // SIGKILL as it begins step `kill_step`; -1: never.
  int kill_rank = -1;
  int64_t kill_step = -1;
  // Tests and diagnostics (trainer/stage_traffic_log.h): a rank of every
  // pipeline stage logs its per-step traffic there; empty: none.
  std::string stage_traffic_dir;
  // FLOP/s per rank that MFU divides by (plan/peak_flops.h resolved, or the
  // BLAS probe's GEMM rate), and where it came from; 0: not known here (only
  // rank 0, which reports, needs it).
  double peak_flops = 0;
  std::string peak_source;
  // The launch asked for --resume: the run directory's attempt history
  // (trainer/attempt_log.h) continues instead of starting anew.
  bool resume_requested = false;
  // Where the model trains (run.device, resolved by trainer/device_choice.h):
  // the index of its CUDA device, -1 for the CPU.
  int cuda_device = -1;
};

// Per rank over a run's steps (trainer/flops_meter.h); negative: not counted.
struct RunUtilization {
  double flops_per_token = 0;  // model forward FLOPs of one token (0: not counted)
  double tflops_per_rank = -1;
  double mfu = -1, hfu = -1;
  double peak_flops = 0;  // per rank; 0: unknown
  std::string peak_source;
};

// The whole run across its launches (rank 0 with a run directory; else this
// attempt alone): a resumed launch continues the steps, losses and time of
// the attempts before it (trainer/attempt_log.h, metrics.jsonl).
struct RunHistory {
  int64_t steps_before = 0;  // steps done before this attempt (its checkpoint's)
  bool has_first_loss = false;
  double first_loss = 0;  // step 1's, from metrics.jsonl
  bool has_first_val_loss = false;
  int64_t first_val_step = 0;
  double first_val_loss = 0;
  int64_t attempts = 1;     // launches that trained, this one included
  double seconds = 0;       // training time of all attempts (as recorded)
  double wall_seconds = 0;  // since the first attempt started
};

struct TrainResult {
  std::vector<double> losses;  // per step of this attempt: mean loss over the global batch
  double loss_floor = 0;       // entropy rate of the synthetic data (0: none, real text)
  // (step, validation loss) of every evaluation (eval.every).
  std::vector<std::pair<int64_t, double>> val_losses;
  double seconds = 0;
  double tokens_per_second = 0;
  // Image classifiers (model.kind resnet): per step the share of the global
  // batch classified right, (step, accuracy) per evaluation, images/s.
  std::vector<double> accuracies;
  std::vector<std::pair<int64_t, double>> val_accuracies;
  double images_per_second = 0;
  uint64_t wire_bytes = 0;
  uint64_t raw_bytes = 0;
  int64_t parameters = 0;     // of the whole model (all shards and stages)
  int64_t skipped_steps = 0;  // updates not applied for non-finite values
  // fp16 loss scaling: of those, gradient overflows the scale absorbed (this
  // run's), and the scale of the last step; 0 without loss scaling.
  int64_t overflow_steps = 0;
  double loss_scale = 0;
  std::vector<double> loss_scales;  // per step (fp16 only)
  // This rank's most bytes of gathered (whole, not shard) parameters alive at
  // once under ZeRO-3: about two layers gathering per layer, the whole stage
  // per model; 0 below stage 3. Also in metrics.jsonl's memory object.
  int64_t peak_gathered_parameter_bytes = 0;
  // This rank's largest parameters + gradients + optimizer state + staging
  // buffers since the start (the optimizer's peak_bytes(); metrics.jsonl's
  // memory.peak_bytes). 0 where the trainer does not count it.
  int64_t peak_state_bytes = 0;
  // On a CUDA device (TrainerOptions::cuda_device), the caching allocator's
  // peak allocated and reserved bytes on it (trainer/device_memory.h); 0 on
  // the CPU.
  int64_t peak_device_allocated_bytes = 0;
  int64_t peak_device_reserved_bytes = 0;
  // The files rank 0 wrote in the run directory ("config.yaml", ...).
  std::vector<std::string> run_files;
  RunUtilization utilization;
  RunHistory history;
};

// Thrown by Trainer::run() on every rank at the same step when the ranks
// agreed to stop training (non-finite values, training.on_nonfinite). Exactly
// one rank, world rank 0, is the reporter: its what() says what went wrong
// where; the others' only point to it. No rank is left inside a collective,
// so the job can end with every rank exiting normally.
class TrainingStopped : public std::runtime_error {
 public:
  TrainingStopped(const std::string& message, bool reporter)
      : std::runtime_error(message), reporter_(reporter) {}
  bool reporter() const { return reporter_; }

 private:
  bool reporter_;
};

class Trainer {
 public:
  Trainer(const config::Config& config, parallel::ProcessGroups& groups,
          TrainerOptions options = {});
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Trains from the current position (0, or the resumed checkpoint's step)
  // to training.steps, saving a checkpoint every checkpoint.every steps
  // (with checkpoint.async, the last one is published before it returns).
  TrainResult run();
  // Saves the current position as a checkpoint under checkpoint_root().
  // Collective over the world group. Returns the checkpoint directory,
  // complete (an asynchronous save is waited for).
  std::string save_checkpoint();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cmpi::trainer
