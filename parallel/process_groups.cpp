#include "parallel/process_groups.h"

#include <stdexcept>
#include <string>

namespace cmpi::parallel {
namespace {

std::unique_ptr<comm::Communicator> make_group(MPI_Comm comm, const comm::Policy& policy,
                                               comm::GroupKind kind, int node) {
  return std::make_unique<comm::Communicator>(
      comm, kind, std::make_unique<comm::PolicySlice>(policy, kind), node);
}

// The node MPI sees, unless the config groups ranks into nodes itself.
int node_of(MPI_Comm world, int world_rank, int64_t ranks_per_node) {
  if (ranks_per_node > 0) return int(world_rank / ranks_per_node);
  return comm::shared_memory_node(world);
}

// Ranks that agree on every coordinate but `varying` land in one group,
// ordered by their coordinate along `varying`.
std::unique_ptr<comm::Communicator> split(MPI_Comm world, const ParallelDims& dims,
                                          const GridCoord& me, int GridCoord::*varying,
                                          const comm::Policy& policy, comm::GroupKind kind,
                                          int node) {
  GridCoord anchor = me;
  anchor.*varying = 0;
  int color = dims.rank_of(anchor);
  MPI_Comm comm;
  MPI_Comm_split(world, color, me.*varying, &comm);
  return make_group(comm, policy, kind, node);
}

}  // namespace

ProcessGroups::ProcessGroups(MPI_Comm world, const ParallelDims& dims,
                             const comm::PolicyConfig& policy)
    : dims_(dims), policy_(policy) {
  int world_size = 0;
  MPI_Comm_rank(world, &world_rank_);
  MPI_Comm_size(world, &world_size);
  if (world_size != dims.world_size())
    throw LayoutError("world group: layout " + dims.to_string() + " needs " +
                      std::to_string(dims.world_size()) + " ranks, the job has " +
                      std::to_string(world_size));
  coord_ = dims.coord_of(world_rank_);
  node_ = node_of(world, world_rank_, policy.ranks_per_node);
  MPI_Comm world_copy;
  MPI_Comm_dup(world, &world_copy);
  world_ = make_group(world_copy, policy_, comm::GroupKind::kWorld, node_);
  tp_ = split(world, dims, coord_, &GridCoord::tp, policy_, comm::GroupKind::kTp, node_);
  sp_ = split(world, dims, coord_, &GridCoord::sp, policy_, comm::GroupKind::kSp, node_);
  dp_ = split(world, dims, coord_, &GridCoord::dp, policy_, comm::GroupKind::kDp, node_);
  pp_ = split(world, dims, coord_, &GridCoord::pp, policy_, comm::GroupKind::kPp, node_);
  MPI_Comm zero_comm;
  MPI_Comm_dup(dp_->mpi(), &zero_comm);
  zero_ = make_group(zero_comm, policy_, comm::GroupKind::kZero, node_);
}

std::vector<comm::AutoDecision> ProcessGroups::adapt(int64_t step, double previous_loss) {
  std::vector<comm::AutoDecision> decisions;
  for (comm::Communicator* group :
       {dp_.get(), zero_.get(), tp_.get(), pp_.get(), sp_.get(), world_.get()}) {
    auto mine = group->adapt(step, previous_loss);
    decisions.insert(decisions.end(), mine.begin(), mine.end());
  }
  return decisions;
}

comm::Communicator& ProcessGroups::group(comm::GroupKind kind) {
  switch (kind) {
    case comm::GroupKind::kWorld:
      return *world_;
    case comm::GroupKind::kDp:
      return *dp_;
    case comm::GroupKind::kTp:
      return *tp_;
    case comm::GroupKind::kPp:
      return *pp_;
    case comm::GroupKind::kSp:
      return *sp_;
    case comm::GroupKind::kZero:
      return *zero_;
  }
  throw std::invalid_argument("unknown group kind");
}

}  // namespace cmpi::parallel
