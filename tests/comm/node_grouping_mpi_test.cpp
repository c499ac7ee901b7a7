// The start-up agreement on which ranks share a node (comm/node_grouping.h):
// every rank ends with the same grouping, and views that disagree (one rank
// believing itself alone) fall back to the host-name grouping with a
// message instead of leaving the ranks in collectives that never match.
#include <gtest/gtest.h>
#include <mpi.h>

#include <vector>

#include "comm/node_grouping.h"

namespace cmpi::comm {
namespace {

std::vector<int> gathered(int value) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<int> all(static_cast<size_t>(size));
  MPI_Allgather(&value, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD);
  return all;
}

TEST(NodeGrouping, EveryRankAgreesOnMpisGrouping) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const NodeGrouping grouping = agree_node_grouping(MPI_COMM_WORLD);
  EXPECT_EQ(grouping.disagreement, "");
  EXPECT_EQ(gathered(grouping.node_of_rank[size_t(rank)]), grouping.node_of_rank);
}

TEST(NodeGrouping, DisagreeingViewsFallBackToOneGroupingEverywhere) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // The last rank believes it is alone; the others see everyone (one host).
  NodeView view;
  if (rank == size - 1) {
    view.members = {rank};
    view.lowest_world_rank = rank;
  } else {
    for (int r = 0; r < size; ++r) view.members.push_back(r);
  }
  const NodeGrouping grouping = agree_node_grouping(MPI_COMM_WORLD, view);
  EXPECT_NE(grouping.disagreement.find("disagree"), std::string::npos) << grouping.disagreement;
  EXPECT_NE(grouping.disagreement.find("host name"), std::string::npos);
  // The same grouping on every rank: this rank's entry is what all see.
  EXPECT_EQ(gathered(grouping.node_of_rank[size_t(rank)]), grouping.node_of_rank);
  // A communicator over the agreed nodes, usable by every rank at once.
  MPI_Comm node = node_communicator(MPI_COMM_WORLD);
  int ranks_on_node = 0;
  MPI_Comm_size(node, &ranks_on_node);
  int one = 1, sum = 0;
  MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, node);
  EXPECT_EQ(sum, ranks_on_node);
  MPI_Comm_free(&node);
}

}  // namespace
}  // namespace cmpi::comm
