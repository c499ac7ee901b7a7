// parallelize_gpt: builds this rank's part of a GPT for the layout of
// `groups` and returns it as a TrainModel. The parallelisms are applied in
// this order, each needing what the one before made:
//   1. pipeline stage: which blocks (and whether the embedding, the head)
//      this rank's pp coordinate holds (parallel.stage_layers, or balanced);
//   2. the model: the stage's layers, tensor-parallel over tp (column- and
//      row-parallel linears, vocab-parallel embedding and loss); under
//      per-layer ZeRO-3 the parameters are stand-ins, so no rank ever builds
//      a whole tensor; initialised on the CPU, then moved to the run's
//      device (GptBuildOptions::cuda_device) with the attention's tables;
//   3. the pipeline engine over pp (pp > 1): the schedule, and the shape of
//      the activations it sends;
//   4. the tied embedding across the pipeline's ends (pp > 1, tied): the
//      first stage sums its two copies' gradients, reduces them over dp and
//      shares the result with the last stage, so both copies stay equal;
//   5. equal replicas: dp rank 0's weights broadcast over dp (skipped under
//      per-layer ZeRO-3, whose generated shards agree by construction);
//   6. the data-parallel optimizer last, because it wraps the parameters the
//      steps before created: dp reduction in buckets, the ZeRO stage, AdamW;
//      it is told which gradients arrive late (the tied table, summed in 4)
//      and how the tied table's reduction is shared,
//      are sparse (the untied embedding) or are counted by another stage (the
//      head's tied copy); under per-layer ZeRO-3 its layer gate goes back
//      into the model;
//   7. parallel.dp_sync: diloco: the optimizer reduces nothing over dp (each
//      dp rank a replica stepping alone) and a DilocoSync over the same
//      parameters averages the replicas' pseudo-gradients every
//      parallel.diloco.sync_every steps (parallel/diloco/diloco_sync.h).
// Throws std::invalid_argument for a layout it cannot run (e.g. tensor dumps
// with pp > 1).
#pragma once

#include <memory>

#include "config/config.h"
#include "data/token_source.h"
#include "models/train_model.h"

namespace cmpi::parallel {
class ProcessGroups;
}

namespace cmpi::models {

struct GptBuildOptions {
  // The sequences to train and evaluate on; null: opened from the config's
  // data section here (collective over the world).
  std::shared_ptr<const data::TokenSource> source;
  bool dump_tensors = false;  // --dump-tensors: needs the whole model on one rank (pp = 1)
  // Where the parameters, optimizer state, batches and activations live: the
  // index of a CUDA device, -1 for the CPU. The model is initialised on the
  // CPU and then moved, so that it starts from the CPU run's weights bit for
  // bit.
  int cuda_device = -1;
};

std::unique_ptr<TrainModel> parallelize_gpt(const config::Config& config,
                                            parallel::ProcessGroups& groups,
                                            GptBuildOptions options);

}  // namespace cmpi::models
