// Which device a rank trains on (run.device), and whether the run's layout
// can train there yet.
//
// cpu: the CPU. cuda: a CUDA device, refused in one line naming the rank and
// its host where LibTorch sees none. auto: cuda where a device is visible,
// else the CPU. Each rank takes the GPU of its rank on the node, modulo the
// GPUs it sees (so ranks share GPUs when a node has more ranks than GPUs; a
// launcher that gives each rank one GPU, `srun --gpus-per-task=1`, leaves
// each rank seeing one: GPU 0). The node is the shared-memory split of the
// world as the ranks agreed on it (comm/node_grouping.h), not an environment
// variable, so mpirun and srun need nothing set.
//
// choose_device is pure (tests give it any node); probe_device_context reads
// what it needs from MPI and LibTorch.
#pragma once

#include <mpi.h>
#include <torch/torch.h>

#include <string>

#include "comm/node_grouping.h"
#include "config/config.h"

namespace cmpi::trainer {

// What a rank knows when it picks its device.
struct DeviceContext {
  int world_rank = 0;
  std::string host;          // MPI_Get_processor_name
  int local_rank = 0;        // rank among the ranks of its node
  int local_size = 1;        // ranks on its node
  int visible_cuda = 0;      // CUDA devices LibTorch sees
  std::string visible_list;  // CUDA_VISIBLE_DEVICES as set, "(unset)" otherwise
};

// The device for `wanted`; throws std::runtime_error naming the rank, host and
// run.device when cuda is asked for and no CUDA device is visible.
torch::Device choose_device(config::RunDevice wanted, const DeviceContext& context);

// How many ranks of the node share `device` (1 on the CPU: not reported).
int ranks_sharing(const torch::Device& device, const DeviceContext& context);

// This rank's (`world_rank`) place among the ranks of its node in the
// grouping the ranks agreed on (comm/node_grouping.h): its rank there, in
// world-rank order, and their number.
struct NodePlace {
  int local_rank = 0;
  int local_size = 1;
};
NodePlace node_place(const comm::NodeGrouping& nodes, int world_rank);

// This rank's host, its place on its node (from the agreed grouping: no
// communication) and, with `count_cuda` (a run that may use a GPU), the
// CUDA devices LibTorch sees (else 0: a CPU run never initialises CUDA).
DeviceContext probe_device_context(const comm::NodeGrouping& nodes, int world_rank,
                                   bool count_cuda);

// Empty when `config` trains on a CUDA device as built so far; else why
// not, naming the key: the GPT with data, tensor (and sequence), pipeline
// and context parallelism at ZeRO stages 0-2 (a full gradient buffer) with
// every-step dp reduction or DiLoCo, every group's tensors staged through host memory
// (parallel/host_staging.h; ZeRO-3 is not built for a device).
std::string device_layout_refusal(const config::Config& config);

// One line for the start of a run: "device: cuda:0 (<name>), shared by 2 ranks".
std::string describe_device(const torch::Device& device, const DeviceContext& context);

}  // namespace cmpi::trainer
