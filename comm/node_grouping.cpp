#include "comm/node_grouping.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "comm/test_faults.h"

namespace cmpi::comm {
namespace {

int world_rank_of(MPI_Comm comm, int rank) {
  MPI_Group group, world;
  MPI_Comm_group(comm, &group);
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  int world_rank = MPI_UNDEFINED;
  MPI_Group_translate_ranks(group, 1, &rank, world, &world_rank);
  MPI_Group_free(&group);
  MPI_Group_free(&world);
  return world_rank;
}

// Node ids by host name: the lowest world rank with the same name.
std::vector<int> group_by_host_name(MPI_Comm comm) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  std::vector<char> names(size_t(size) * MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(), MPI_MAX_PROCESSOR_NAME,
                MPI_CHAR, comm);
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  std::vector<int> world_ranks(static_cast<size_t>(size));
  MPI_Allgather(&world_rank, 1, MPI_INT, world_ranks.data(), 1, MPI_INT, comm);
  std::vector<int> node_of_rank(size_t(size), INT_MAX);
  for (int r = 0; r < size; ++r)
    for (int s = 0; s < size; ++s)
      if (std::strncmp(&names[size_t(r) * MPI_MAX_PROCESSOR_NAME],
                       &names[size_t(s) * MPI_MAX_PROCESSOR_NAME], MPI_MAX_PROCESSOR_NAME) == 0)
        node_of_rank[size_t(r)] = std::min(node_of_rank[size_t(r)], world_ranks[size_t(s)]);
  return node_of_rank;
}

}  // namespace

NodeView shared_memory_view(MPI_Comm comm) {
  int rank = 0, world_rank = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  NodeView view;
  if (TestFaults::from_environment().lone_node_rank == world_rank) {
    // Still take part in the split: the other ranks are in it.
    MPI_Comm shared;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared);
    MPI_Comm_free(&shared);
    view.members = {rank};
    view.lowest_world_rank = world_rank;
    return view;
  }
  MPI_Comm shared;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared);
  MPI_Group shared_group, comm_group, world_group;
  MPI_Comm_group(shared, &shared_group);
  MPI_Comm_group(comm, &comm_group);
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  int shared_size = 1;
  MPI_Group_size(shared_group, &shared_size);
  std::vector<int> shared_ranks(static_cast<size_t>(shared_size)),
      world_ranks(static_cast<size_t>(shared_size));
  for (int r = 0; r < shared_size; ++r) shared_ranks[size_t(r)] = r;
  view.members.resize(size_t(shared_size));
  MPI_Group_translate_ranks(shared_group, shared_size, shared_ranks.data(), comm_group,
                            view.members.data());
  MPI_Group_translate_ranks(shared_group, shared_size, shared_ranks.data(), world_group,
                            world_ranks.data());
  view.lowest_world_rank = *std::min_element(world_ranks.begin(), world_ranks.end());
  MPI_Group_free(&shared_group);
  MPI_Group_free(&comm_group);
  MPI_Group_free(&world_group);
  MPI_Comm_free(&shared);
  return view;
}

bool view_agrees(const NodeView& own_view, const std::vector<int>& keys) {
  const int own_size = int(own_view.members.size());
  auto has_own_key = [&](size_t rank) {
    return keys[2 * rank] == own_view.lowest_world_rank && keys[2 * rank + 1] == own_size;
  };
  for (int member : own_view.members)
    if (member < 0 || 2 * size_t(member) >= keys.size() || !has_own_key(size_t(member)))
      return false;
  int holding = 0;
  for (size_t rank = 0; 2 * rank < keys.size(); ++rank) holding += has_own_key(rank) ? 1 : 0;
  return holding == own_size;
}

NodeGrouping agree_node_grouping(MPI_Comm comm) {
  return agree_node_grouping(comm, shared_memory_view(comm));
}

NodeGrouping agree_node_grouping(MPI_Comm comm, const NodeView& own_view) {
  int size = 1, rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  const int own_key[2] = {own_view.lowest_world_rank, int(own_view.members.size())};
  std::vector<int> keys(2 * size_t(size));
  MPI_Allgather(own_key, 2, MPI_INT, keys.data(), 2, MPI_INT, comm);
  const int mine = view_agrees(own_view, keys) ? INT_MAX : rank;
  int first_disagreeing = INT_MAX;
  MPI_Allreduce(&mine, &first_disagreeing, 1, MPI_INT, MPI_MIN, comm);

  NodeGrouping grouping;
  if (first_disagreeing == INT_MAX) {
    grouping.node_of_rank.resize(size_t(size));
    for (int r = 0; r < size; ++r) grouping.node_of_rank[size_t(r)] = keys[2 * size_t(r)];
    return grouping;
  }
  grouping.node_of_rank = group_by_host_name(comm);
  const size_t r = size_t(first_disagreeing);
  std::vector<int> distinct = grouping.node_of_rank;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  grouping.disagreement =
      "the ranks disagree on which of them share a node (MPI_COMM_TYPE_SHARED): world rank " +
      std::to_string(world_rank_of(comm, first_disagreeing)) + " sees a node of " +
      std::to_string(keys[2 * r + 1]) + " rank(s) from world rank " + std::to_string(keys[2 * r]) +
      " that its members do not all see; grouping the ranks by host name instead (" +
      std::to_string(distinct.size()) + " node" + (distinct.size() == 1 ? "" : "s") + ")";
  return grouping;
}

MPI_Comm node_communicator(MPI_Comm comm) {
  const NodeGrouping grouping = agree_node_grouping(comm);
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm node;
  MPI_Comm_split(comm, grouping.node_of_rank[size_t(rank)], rank, &node);
  return node;
}

}  // namespace cmpi::comm
