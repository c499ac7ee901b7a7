// What the bi-directional pipeline (GEMS-MASTER) needs beyond two ordinary
// pipelines: replica A runs stages 0..S-1 over pp ranks 0..S-1, replica B
// the same stages in the opposite direction, so pp rank r holds stage r of A
// and stage S-1-r of B. B's pipeline is an ordinary PipelineEngine over a
// copy of the pp group whose ranks are numbered backwards
// (reversed_pipeline_group). Stage s of A lives on pp rank s, stage s of B on
// pp rank S-1-s, its mirror: after backward, combine_with_mirror swaps each
// rank's A tensors with its mirror's B tensors (and B with A) over the pp
// group and adds (or averages) them, so both copies of every stage hold the
// same sum. x + y and y + x are the same float, so the copies stay
// bit-identical. With S odd the middle rank is its own mirror and adds
// locally.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "comm/communicator.h"

namespace cmpi::parallel {

class ProcessGroups;

// The pp group with rank r renumbered S-1-r (group kind pp, the same policy
// slice and node). Collective over the pp group.
std::unique_ptr<comm::Communicator> reversed_pipeline_group(ProcessGroups& groups);

// A copy of group `kind` (same ranks, policy slice and node) for replica B's
// thread, so its collectives cannot match replica A's. Collective over it.
std::unique_ptr<comm::Communicator> duplicate_group(ProcessGroups& groups, comm::GroupKind kind);

// The pp rank holding the other replica's copy of this rank's stages.
inline int mirror_rank(const comm::Communicator& pp) {
  return pp.size() - 1 - pp.rank();
}

enum class MirrorCombine { kSum, kAverage };

// a[i] (replica A, stage r) is combined with the mirror's b[i] (replica B,
// stage r) and b[i] with the mirror's a[i]; the lists must have the same
// shapes as the mirror's B and A lists, in the same order. Undefined tensors
// (a parameter without a gradient) count as zeros. Collective over pp (pairs).
void combine_with_mirror(comm::Communicator& pp, const std::vector<torch::Tensor>& a,
                         const std::vector<torch::Tensor>& b, comm::Role role, MirrorCombine how);

}  // namespace cmpi::parallel
