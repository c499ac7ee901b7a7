// The pre-flight memory check: before any tensor is allocated, every rank
// estimates its memory for a step (parallel/memory_estimate.h), and the ranks
// sharing a node compare their sum with the memory the node has available
// (MemAvailable, or the cgroup's limit if lower). A run that cannot fit
// fails here, naming the config keys that drive the largest part, instead of
// dying in an allocation (or the kernel's OOM killer) minutes later.
// `run.memory_check: false` turns it off for a user who knows better. The
// estimate is the model family's (models/family/model_family.h); a family
// without one is not checked.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "parallel/memory_estimate.h"
#include "parallel/mesh/parallel_dims.h"

namespace cmpi::launch {

using config::Config;

// Bytes this process could still allocate on its node (MemAvailable, capped
// by the cgroup v2/v1 limit); 0 if unknown.
uint64_t available_memory_bytes();

// Empty if the run fits (or the check is off or unknowable); otherwise the
// error message. `ranks_on_node` ranks share `available_bytes` of the memory
// `where` names ("this node", or a GPU run's "GPU cuda:0", whose ranks are
// those sharing the GPU).
std::string memory_fit_error(const Config& config, const parallel::ParallelDims& dims,
                             int ranks_on_node, uint64_t available_bytes,
                             const std::string& where = "this node");

// Collective over `world`: this rank's verdict (empty = fits). The ranks of
// a node judge the same reading of its available memory.
std::string check_memory_fits(const Config& config, const parallel::ParallelDims& dims,
                              MPI_Comm world);

}  // namespace cmpi::launch
