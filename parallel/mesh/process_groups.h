// ProcessGroups: one Communicator per parallel group of this rank, built once
// from ParallelDims by MPI_Comm_split (one per kMesh row) and passed
// explicitly to whatever communicates. `zero` is a duplicate of `dp` (ZeRO
// shards over the DP ranks; see kGroupCopies) so that its traffic is counted
// and governed by its own policy slice.
// Each communicator gets the slice of one Policy built from `policy`: the
// codec instances its group's rules need, so nothing is looked up per call.
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "comm/policy.h"
#include "comm/policy_config.h"
#include "parallel/mesh/parallel_dims.h"

namespace cmpi::parallel {

class ProcessGroups {
 public:
  // Collective over `world`: every rank must call it with the same dims and
  // policy. Throws comm::PolicyError (naming the rule) for a bad policy.
  ProcessGroups(MPI_Comm world, const ParallelDims& dims,
                const comm::PolicyConfig& policy = comm::PolicyConfig{});

  const ParallelDims& dims() const { return dims_; }
  const GridCoord& coord() const { return coord_; }
  int world_rank() const { return world_rank_; }
  // This rank's node id (see comm::PolicyConfig::ranks_per_node): ranks with
  // the same id share a node, and the policy's locality rules follow it.
  int node() const { return node_; }
  const comm::Policy& policy() const { return policy_; }

  comm::Communicator& world() { return group(comm::GroupKind::kWorld); }
  comm::Communicator& dp() { return group(comm::GroupKind::kDp); }
  comm::Communicator& tp() { return group(comm::GroupKind::kTp); }
  comm::Communicator& pp() { return group(comm::GroupKind::kPp); }
  comm::Communicator& sp() { return group(comm::GroupKind::kSp); }
  // Context parallelism's ring (the dp group spans its ranks too).
  comm::Communicator& cp() { return group(comm::GroupKind::kCp); }
  comm::Communicator& zero() { return group(comm::GroupKind::kZero); }
  comm::Communicator& group(comm::GroupKind kind);

  // Preset auto: every group's step-boundary decision
  // (comm::Communicator::adapt), in one fixed order (kMesh's rows, each
  // followed by its copies, then world: dp, zero, tp, pp, sp, cp, world) so that
  // no two ranks wait on different groups. Collective over the world; call
  // between steps, when no operation is in flight.
  // `previous_loss`: the training loss of step - 1 (kNoPreviousLoss: none).
  std::vector<comm::AutoDecision> adapt(int64_t step, double previous_loss = comm::kNoPreviousLoss);

 private:
  ParallelDims dims_;
  comm::Policy policy_;
  GridCoord coord_;
  int world_rank_ = 0;
  int node_ = 0;
  // Indexed by comm::GroupKind; every kind is built.
  std::array<std::unique_ptr<comm::Communicator>, comm::kGroupKindCount> groups_;
};

}  // namespace cmpi::parallel
