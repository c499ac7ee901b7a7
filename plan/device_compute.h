// A micro-batch's compute time on a GPU, from its kernels (`--plan-device`):
// every GEMM of a block (q/k/v, the output projection, the MLP's two or three
// matrices, the head on the last stage) at the device's peak times the
// efficiency its shape reaches (plan/device_profile.h), attention's QK^T and
// AV as batched GEMMs whose inner dimension is one head's width (or, with a
// fused flash kernel, at that kernel's efficiency and without the
// [seq, seq] scores in memory), and the elementwise kernels between them
// (norms, bias + GeLU, softmax, dropout, residual adds, the cross entropy)
// as bytes over the memory bandwidth. Backward runs every GEMM twice (input
// and weight gradients) and reads and writes about twice the forward's
// elementwise bytes; recomputation runs the recomputed part's forward again
// inside backward (plan/model_flops.h counts the same FLOPs).
//
// The elementwise bytes per token and block, in the compute dtype (4 bytes
// under fp32, 2 under bf16/fp16), are the passes a fused implementation
// makes (as Megatron-LM's fused bias + GeLU, bias + dropout + add and
// scale + mask + softmax kernels do; this trainer's own kernels on a GPU
// have not been timed against these counts):
//   replicated [., hidden]   two norms (read + write), two bias + dropout +
//                            residual adds (read two, write one): 10 hidden;
//                            1/tp of the tokens under sequence parallelism;
//                            dropout > 0 adds two 1-byte masks;
//   tp-split                 q/k/v bias and layout: read + write of the qkv
//                            rows; bias + activation: read + write of the MLP
//                            width (gated: two reads, one write);
//   scores (not flash)       heads/tp x seq per token: the QK^T output written,
//                            softmax read and written, AV's read (4 passes;
//                            dropout > 0: its read, write and 1-byte mask);
//   cross entropy (head)     the logits in float32, three passes.
// The optimizer's step is bytes too: AdamW reads and writes the float32
// master, both moments and reads the gradient (32 bytes per parameter of the
// rank's optimizer shard).
#pragma once

#include "config/config.h"
#include "parallel/mesh/parallel_dims.h"
#include "plan/device_profile.h"
#include "plan/step_traffic.h"

namespace cmpi::plan {

struct DeviceMicroBatch {
  double forward_seconds = 0;
  double backward_seconds = 0;   // recomputation included
  double recompute_seconds = 0;  // of backward_seconds
  double gemm_seconds = 0;       // of the forward: GEMMs and the attention core
  double memory_seconds = 0;     // of the forward: elementwise kernels
  double core_seconds = 0;       // of the forward: one block's attention core (GEMMs and passes)
};

// One micro-batch of `stage` on one rank, tensor parallel over `tp`.
DeviceMicroBatch device_micro_batch(const config::Config& config, const StageShape& stage, int tp,
                                    const DeviceProfile& device, bool flash_attention);

// AdamW's step over the optimizer shard of one rank of `stage` (its tp share
// of the stage's parameters, 1/dp of it under ZeRO 1-3).
double device_optimizer_seconds(const StageShape& stage, const parallel::ParallelDims& dims,
                                const DeviceProfile& device);

}  // namespace cmpi::plan
