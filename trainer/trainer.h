// Trainer: runs the training loop of one rank. Per step, for each of its
// micro-batches: forward, loss scaled by 1/(micro-batches x dp), backward
// (gradients accumulate); then gradients are averaged over the DP group in
// buckets, clipped by global norm, and AdamW steps with the scheduled
// learning rate. Rank 0 reports progress and appends metrics.jsonl. A step
// whose loss or gradients went non-finite is never applied; all ranks agree
// on it after the step and then skip it or stop together (NonfiniteGuard,
// training.on_nonfinite).
//
// The header is torch-free (the model and optimizer live behind Impl), so
// the CLI and tests that only drive a run compile without LibTorch.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "trainer/config.h"

namespace cmpi::parallel {
class ProcessGroups;
}

namespace cmpi::trainer {

class TokenSource;
class CnnTrainer;

struct TrainerOptions {
  std::string run_dir;           // empty: write no files
  std::string resolved_config;   // written to <run_dir>/config.yaml
  int64_t print_every = -1;      // -1: log.every from the config; 0: silent
  std::string dump_tensors_dir;  // non-empty: after the last step, write
                                 // gradients.f32 and activations.f32 there
  // The sequences to train and evaluate on; null: the trainer opens the
  // config's data itself (open_token_source, collective over the world).
  std::shared_ptr<const TokenSource> source;
  // A complete checkpoint directory to continue from (resolved: see
  // resolve_resume_path); empty: start at step 0.
  std::string resume_path;
};

struct TrainResult {
  std::vector<double> losses;  // per step: mean loss over the global batch
  double loss_floor = 0;       // entropy rate of the synthetic data (0: unknown)
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
  // This rank's most bytes of gathered (whole, not shard) parameters alive at
  // once under ZeRO-3: about two layers gathering per layer, the whole stage
  // per model; 0 below stage 3. Also in metrics.jsonl's memory object.
  int64_t peak_gathered_parameter_bytes = 0;
  // This rank's largest parameters + gradients + optimizer state + staging
  // buffers since the start (the optimizer's peak_bytes(); metrics.jsonl's
  // memory.peak_bytes). 0 where the trainer does not count it.
  int64_t peak_state_bytes = 0;
  // The files rank 0 wrote in the run directory ("config.yaml", ...).
  std::vector<std::string> run_files;
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
  Trainer(const Config& config, parallel::ProcessGroups& groups, TrainerOptions options = {});
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // model.kind resnet runs CnnTrainer (cnn_trainer.h), which supports
  // neither checkpoints nor tensor dumps.
  // Trains from the current position (0, or the resumed checkpoint's step)
  // to training.steps, saving a checkpoint every checkpoint.every steps.
  TrainResult run();
  // Saves the current position as a checkpoint under checkpoint_root().
  // Collective over the world group. Returns the checkpoint directory.
  std::string save_checkpoint();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::unique_ptr<CnnTrainer> cnn_;
};

}  // namespace cmpi::trainer
