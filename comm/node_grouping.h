// Which ranks of a communicator share a node, agreed by all of them.
//
// MPI_COMM_TYPE_SHARED gives each rank its own view of the ranks it shares
// memory with, and nothing makes the views agree: on a cluster whose nodes
// report one host name (an emulated cluster of network namespaces), rank 2
// saw ranks 2-7 on its node while ranks 0-1 saw themselves alone, and any
// collective over such "node" communicators waited forever. So:
//   1. Each rank reads its view: the ranks of its MPI_COMM_TYPE_SHARED
//      communicator, translated into ranks of `comm` (a local query; nothing
//      is sent over the shared communicator, which may be inconsistent).
//   2. The ranks allgather a key of each view, (lowest world rank, size).
//      Each rank checks that every member of its view has its key, and that
//      exactly `size` ranks have it; one allreduce agrees on the verdict.
//      If every rank passes, the views are the classes of one partition: a
//      view holds only ranks of its key, and as many as hold the key.
//   3. Otherwise every rank groups by host name (MPI_Get_processor_name,
//      gathered from all), the same grouping on every rank by construction,
//      and the result says what disagreed, for a warning.
// A node's id is the lowest world rank on it, as comparable across groups
// as MPI_COMM_TYPE_SHARED's was.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace cmpi::comm {

struct NodeGrouping {
  std::vector<int> node_of_rank;  // per rank of the communicator
  // Empty when the ranks' MPI_COMM_TYPE_SHARED views agreed; else what
  // disagreed, and that the grouping is by host name.
  std::string disagreement;
};

// One rank's view (step 1), as ranks of `comm`, and its key.
struct NodeView {
  std::vector<int> members;  // ranks of the communicator, this rank included
  int lowest_world_rank = 0;
};

// Collective over `comm`.
NodeGrouping agree_node_grouping(MPI_Comm comm);
// The same from the view this rank is given (tests give disagreeing ones).
NodeGrouping agree_node_grouping(MPI_Comm comm, const NodeView& own_view);

// This rank's view as MPI_COMM_TYPE_SHARED gives it (collective over comm).
NodeView shared_memory_view(MPI_Comm comm);

// Step 2's check on one rank: `keys` holds every rank's (lowest world rank,
// view size), two ints per rank of the communicator.
bool view_agrees(const NodeView& own_view, const std::vector<int>& keys);

// A communicator of the ranks of `comm` on this rank's node, by the agreed
// grouping (the caller frees it). Collective over `comm`.
MPI_Comm node_communicator(MPI_Comm comm);

}  // namespace cmpi::comm
