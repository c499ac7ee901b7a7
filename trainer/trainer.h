// Trainer: runs the training loop of one rank. Per step, for each of its
// micro-batches: forward, loss scaled by 1/(micro-batches x dp), backward
// (gradients accumulate); then gradients are averaged over the DP group in
// buckets, clipped by global norm, and AdamW steps with the scheduled
// learning rate. Rank 0 reports progress and appends metrics.jsonl.
//
// The header is torch-free (the model and optimizer live behind Impl), so
// the CLI and tests that only drive a run compile without LibTorch.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trainer/config.h"

namespace cmpi::parallel {
class ProcessGroups;
}

namespace cmpi::trainer {

struct TrainerOptions {
  std::string run_dir;           // empty: write no files
  std::string resolved_config;   // written to <run_dir>/config.yaml
  int64_t print_every = -1;      // -1: log.every from the config; 0: silent
  std::string dump_tensors_dir;  // non-empty: after the last step, write
                                 // gradients.f32 and activations.f32 there
};

struct TrainResult {
  std::vector<double> losses;  // per step: mean loss over the global batch
  double loss_floor = 0;       // entropy rate of the synthetic data
  double seconds = 0;
  double tokens_per_second = 0;
  uint64_t wire_bytes = 0;
  uint64_t raw_bytes = 0;
  int64_t parameters = 0;  // of the whole model (all shards and stages)
  // The files rank 0 wrote in the run directory ("config.yaml", ...).
  std::vector<std::string> run_files;
};

class Trainer {
 public:
  Trainer(const Config& config, parallel::ProcessGroups& groups, TrainerOptions options = {});
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  TrainResult run();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cmpi::trainer
