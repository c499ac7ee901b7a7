// The projected step of a run, per rank, before it runs: memory, what each
// group moves raw and on the wire under the configured policy, and a step
// time from a compute model, a link model and measured codecs.
//
// Step time (the slowest pipeline stage's view):
//   compute   forward 2 x FLOP-bearing parameters x tokens (+ attention
//             4 x seq x hidden / tp per token and layer), backward twice that
//             plus recomputation (plan/model_flops.h, the trainer's MFU
//             formula), at `flops_per_second` per rank;
//   tp, pp    blocking: paid per micro-batch on the critical path;
//   cp        the ring attention's hops, per micro-batch, less what the
//             attention of the block held hides (plan/ring_overlap.h);
//   pipeline  1F1B and GPipe both take (m + pp - 1) slots of the slowest
//             stage's micro-batch time, so the bubble is (pp-1)/(m+pp-1);
//   dp        gradient buckets run on the comm thread during the last
//             micro-batch's backward: all but the last bucket can hide behind
//             it, the last one (or all of them without overlap) is exposed;
//   step      + per-step collectives (loss, norms, tied embedding, ZeRO's
//             weight allgather);
//   cores     ranks that share fewer cores than they are (`cores` < world
//             size, e.g. an emulated cluster on one machine) time-share them.
//             Waits that poll (`spinning_waits`: OpenMPI's yield_when_idle and
//             the collectives' sched_yield loops) keep every rank runnable,
//             so a computing rank gets cores / world size of a core all step
//             long: its compute is stretched by world size / cores. Waits
//             that sleep leave the cores to the computing ranks: the step
//             then takes at least every rank's CPU work (compute and codecs)
//             / cores + the per-step communication at its end, when no rank
//             has work (the bubble and the waits are filled by other ranks'
//             work, so they do not add). Both bounds apply with polling.
// Links: the ranks of one pipeline stage on a node move their dp, zero, tp
// and pp messages in lockstep, so they share the node's uplink.
// The step is split into parts that add up to it (compute, and each group's
// exposed time on the critical path: the pacing stage's blocking messages
// over all slots, the per-step messages of the stage that waits longest,
// with a device profile the optimizer's step); the largest part is named as
// the bound.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "parallel/memory_estimate.h"
#include "parallel/mesh/parallel_dims.h"
#include "plan/cost_model.h"
#include "plan/device_profile.h"
#include "plan/model_flops.h"
#include "plan/software_stack.h"
#include "plan/step_traffic.h"

namespace cmpi::plan {

struct PlanOptions {
  int world_size = 0;
  int ranks_per_node = 8;
  Link intra{400e9, 2e-6};
  Link inter{25e9, 5e-6};
  double flops_per_second = 50e9;  // per rank, achieved on this model's kernels
  double codec_scale = 1.0;        // codec throughput per rank, in cores of this machine
  // Cores all ranks share (the machine of an emulated cluster); 0: every
  // rank has its own.
  double cores = 0;
  // Waiting ranks poll (true) or sleep (false); matters only with `cores`.
  bool spinning_waits = true;
  // Goodput over link rate: MPI over TCP on the emulated cluster's shaped
  // links measured 0.81 (1 Gbit/s) and 0.84 (200 Mbit/s) for a 13.8 MB ring
  // allreduce over 4 nodes.
  double link_efficiency = 0.85;
  // The intra-node link's (0: link_efficiency): a cluster profile gives
  // NVLink and InfiniBand their own (plan/cluster_profile.h).
  double intra_link_efficiency = 0;
  // --plan-device: a GPU's profile, whose kernel model (plan/device_compute.h)
  // replaces flops_per_second and adds the optimizer's step; absent or cpu:
  // the flat rate above.
  std::optional<DeviceProfile> device;
  // With a device: the attention core runs as one fused flash kernel.
  bool flash_attention = false;
  // With a device: the code base whose kernels run (--plan-stack); every
  // kernel time of the device model is divided by its kernel_efficiency.
  SoftwareStack stack;
  bool on_device() const { return device && !device->measured_here(); }
};

struct GroupCost {
  comm::GroupKind group;
  std::string locality;  // "intra" | "inter"
  int64_t calls = 0;
  double raw_bytes = 0, wire_bytes = 0;  // this rank, per step
  double seconds = 0;                    // all its calls, per step
  double exposed_seconds = 0;            // of them on the step's critical path
  std::string codecs;                    // the codecs the policy picks, or "raw"
};

struct StagePlan {
  StageShape shape;
  parallel::MemoryEstimate memory;  // a rank of this stage
  std::vector<GroupCost> groups;
  double forward_seconds = 0, backward_seconds = 0;  // per micro-batch
  double optimizer_seconds = 0;                      // per step (with a device profile; else 0)
};

// One part of the step time: "compute" (the pacing stage's forward and
// backward over all pipeline slots, bubble included; under the time-sharing
// bound all ranks' CPU work over the cores) or a group's exposed seconds.
struct StepPart {
  std::string name;
  double seconds = 0;
};

struct StepPlan {
  std::string preset;
  config::Precision precision = config::Precision::kFp32;  // training.precision
  std::string tp_forward_sum;  // parallel.tp_forward_sum: float32 or compute
  // parallel.dp_sync and, under diloco, what decides its dp traffic.
  std::string dp_sync = "every_step";
  int64_t sync_every = 1, fragments = 1, diloco_warmup_steps = 0;
  parallel::ParallelDims dims;
  int64_t micro_batches = 1;
  // parallel.pipeline_balance as set ("uniform", "auto" or "explicit") and
  // the layers per stage it gave.
  std::string pipeline_balance;
  std::vector<int64_t> stage_layers;
  parallel::MemoryEstimate memory;  // the stage that needs the most
  std::vector<StagePlan> stages;
  // Critical-path compute, bubble included: the stage that sets the
  // pipeline's pace (or, when the time-sharing bound holds, all ranks' CPU
  // work over the cores).
  double compute_seconds = 0;
  double bubble_fraction = 0;
  double step_seconds = 0;
  double cpu_bound_seconds = 0;  // the time-sharing bound (0: cores not shared)
  double compute_stretch = 1;    // world size / cores with polling waits, else 1
  double tokens_per_second = 0;
  // The FLOPs a step runs (plan/model_flops.h: recomputation included, the
  // count Megatron-LM's published TFLOP/s use) per rank and second.
  double hardware_flops_per_rank = 0;
  // The parts of step_seconds, compute first; they add up to it.
  std::vector<StepPart> parts;
  std::string bound_by;  // the largest part's name: "compute" or a group
};

StepPlan plan_step(const config::Config& config, const parallel::ParallelDims& dims,
                   const PlanOptions& options, CodecCostTable& codecs);

}  // namespace cmpi::plan
