// The messages one rank sends in one training step, derived from the config
// and the layout alone, in the same terms as the rank's CommStats: per group,
// operation and role, how many calls of how many bytes each, and the bytes
// the rank itself puts on the wire for them uncompressed, counted as
// CommStats counts them (an allreduce as the project's ring: 2(n-1)/n of the
// buffer, exactly 2n minus the rank's two segments; a reduce-scatter or
// allgather (n-1)/n; a chain broadcast all of it except on the chain's last
// rank; a send all of it).
//
// What a step sends (mirrors the trainer, parallel/ and models/):
//   dp    gradient buckets (allreduce; ZeRO 2/3: reduce-scatter over zero),
//         an untied token embedding's in buckets of its own (role
//         embedding_gradient), the loss (one float); under parallel.dp_sync:
//         diloco no gradient crosses dp: the same buckets carry the
//         pseudo-gradients (role pseudo_gradient) once every
//         diloco.sync_every steps (every_steps; with F fragments 1/F of them
//         every sync_every/F steps, the same average), and the tied table's
//         share over pp again with them;
//   zero  ZeRO 1/2: the updated weights (allgather); ZeRO 3: the weights
//         gathered before forward;
//   tp    per micro-batch: the vocab-parallel embedding's output (first
//         stage), two activations per block forward (row-parallel outputs)
//         and two activation gradients per block backward (column-parallel
//         inputs), on the last stage the head's input gradient and the cross
//         entropy's per-token statistics;
//         the gradient norm's partial sum; with parallel.sequence_parallel
//         the activations as reduce-scatters and all-gathers instead (the
//         column-parallel inputs gathered a second time in backward) and
//         the exact tp sums of the sequence regions' parameter gradients
//         (plan/step_traffic.cpp, sequence_parallel_traffic);
//   pp    per micro-batch an activation forward and its gradient backward at
//         each stage boundary (1/tp of the sequence with sequence parallelism), the tied
//         embedding's gradient between the end stages (tied only), the loss broadcast and the
//         gradient norm.
//   cp    per micro-batch and block, the ring attention's key/value blocks
//         (cp - 1 hops forward, again in backward, in the compute dtype) and
//         their float32 gradient accumulators (cp hops); the dp and zero
//         groups then span dp x cp ranks, and tp/pp messages carry
//         seq_len / cp positions.
// Pipeline stages differ; traffic is computed for one stage at a time.
#pragma once

#include <cstdint>
#include <vector>

#include "comm/group_kind.h"
#include "config/config.h"
#include "parallel/mesh/parallel_dims.h"

namespace cmpi::plan {

struct MessageClass {
  comm::GroupKind group;
  comm::Op op;
  comm::Role role;
  int64_t calls = 0;         // per step
  int64_t bytes = 0;         // the buffer of one call
  double sent_fraction = 1;  // of `bytes`, what this rank sends per call
  int group_size = 1;
  // Bytes per element: 2 for activations and their gradients under bf16 or
  // fp16 compute (tp collectives, pp sends), which travel as 16-bit words
  // (comm/communicator_words16.cpp); 4 for everything else.
  int word_bytes = 4;
  // Reduced during the last micro-batch's backward (dp/zero gradient buckets
  // with training.overlap_grad_reduce), so it can hide behind compute.
  bool overlaps_backward = false;
  // On the pipeline's critical path once per micro-batch (tp collectives,
  // pp sends) rather than once per step.
  bool per_micro_batch = false;
  // Per-layer ZeRO-3's parameter gathers: in every micro-batch's forward and
  // backward, each prefetched while the previous layer computes, so only what
  // exceeds that compute is exposed.
  bool prefetched_per_layer = false;
  // Sent once every this many steps (DiLoCo's pseudo-gradients every
  // parallel.diloco.sync_every steps): the per-step figures are the average,
  // 1/every_steps of one occurrence.
  int64_t every_steps = 1;
  double sent_bytes() const {
    return double(calls) * double(bytes) * sent_fraction / double(every_steps);
  }
};

struct StageShape {
  int stage = 0;
  int64_t layers = 0;
  bool has_embedding = false, has_head = false;
  int64_t parameters = 0;  // this rank's (its tp shard of the stage)
};

StageShape stage_shape(const config::Config& config, const parallel::ParallelDims& dims, int stage);

// Blocks of a stage of `stage_layers` that training.recompute: full runs
// twice (the first training.recompute_layers, 0 = all; none otherwise):
// their forward's two tp allreduces are sent again in backward.
int64_t recomputed_blocks(const config::Config& config, int64_t stage_layers);

std::vector<MessageClass> step_traffic(const config::Config& config,
                                       const parallel::ParallelDims& dims, int stage);

}  // namespace cmpi::plan
