#include "parallel/mesh/process_groups.h"

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

// Ranks that agree on every coordinate but `varying`'s (and those of the
// dimensions its group also spans, kGroupSpans) land in one group, ordered
// by their coordinate along `varying`, then along the spanned dimension.
std::unique_ptr<comm::Communicator> split(MPI_Comm world, const ParallelDims& dims,
                                          const GridCoord& me, const MeshDimInfo& varying,
                                          const comm::Policy& policy, int node) {
  GridCoord anchor = me;
  anchor.*varying.coord = 0;
  int key = me.*varying.coord;
  for (const GroupSpan& span : kGroupSpans) {
    if (span.dim != varying.dim) continue;
    const MeshDimInfo& also = mesh_dim(span.also);
    anchor.*also.coord = 0;
    key = key * dims.*also.size + me.*also.coord;
  }
  int color = dims.rank_of(anchor);
  MPI_Comm comm;
  MPI_Comm_split(world, color, key, &comm);
  return make_group(comm, policy, varying.group, node);
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
  groups_[size_t(comm::GroupKind::kWorld)] =
      make_group(world_copy, policy_, comm::GroupKind::kWorld, node_);
  // Splits are collective: every rank makes them in the same (rank) order.
  for (MeshDim dim : kMeshRankOrder) {
    const MeshDimInfo& d = mesh_dim(dim);
    groups_[size_t(d.group)] = split(world, dims, coord_, d, policy_, node_);
  }
  for (const GroupCopy& copy : kGroupCopies) {
    MPI_Comm copy_comm;
    MPI_Comm_dup(group(mesh_dim(copy.of).group).mpi(), &copy_comm);
    groups_[size_t(copy.copy)] = make_group(copy_comm, policy_, copy.copy, node_);
  }
}

std::vector<comm::AutoDecision> ProcessGroups::adapt(int64_t step, double previous_loss) {
  std::vector<comm::GroupKind> order;
  for (const MeshDimInfo& d : kMesh) {
    order.push_back(d.group);
    for (const GroupCopy& copy : kGroupCopies)
      if (copy.of == d.dim) order.push_back(copy.copy);
  }
  order.push_back(comm::GroupKind::kWorld);
  std::vector<comm::AutoDecision> decisions;
  for (comm::GroupKind kind : order) {
    auto mine = group(kind).adapt(step, previous_loss);
    decisions.insert(decisions.end(), mine.begin(), mine.end());
  }
  return decisions;
}

comm::Communicator& ProcessGroups::group(comm::GroupKind kind) {
  const size_t index = size_t(kind);
  if (index >= groups_.size() || groups_[index] == nullptr)
    throw std::invalid_argument("unknown group kind");
  return *groups_[index];
}

}  // namespace cmpi::parallel
