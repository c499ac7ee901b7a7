// For every layout that fits the world size, each rank's grid coordinates
// and the members of each of its groups (in group-rank order) must match the
// stated ordering: tp fastest, then sp, dp, pp.
#include <gtest/gtest.h>
#include <mpi.h>

#include <vector>

#include "parallel/mesh/process_groups.h"

namespace cmpi::parallel {
namespace {

std::vector<ParallelDims> layouts_for(int world) {
  std::vector<ParallelDims> out;
  for (int tp = 1; tp <= world; ++tp)
    for (int sp = 1; sp <= world; ++sp)
      for (int pp = 1; pp <= world; ++pp) {
        if (world % (tp * sp * pp) != 0) continue;
        ParallelDims d;
        d.tp = tp;
        d.sp = sp;
        d.pp = pp;
        d.dp = world / (tp * sp * pp);
        out.push_back(d);
      }
  return out;
}

// World ranks of the group members, in their group-rank order.
std::vector<int> members(comm::Communicator& group) {
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  std::vector<int> out(group.size());
  MPI_Allgather(&me, 1, MPI_INT, out.data(), 1, MPI_INT, group.mpi());
  return out;
}

std::vector<int> expected(const ParallelDims& d, GridCoord c, int GridCoord::*axis, int extent) {
  std::vector<int> out;
  for (int i = 0; i < extent; ++i) {
    c.*axis = i;
    out.push_back(d.rank_of(c));
  }
  return out;
}

TEST(ProcessGrid, CoordinatesAndGroupsFollowTpSpDpPpOrder) {
  int world = 0, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  auto layouts = layouts_for(world);
  ASSERT_FALSE(layouts.empty());
  for (const auto& dims : layouts) {
    SCOPED_TRACE("layout " + dims.to_string() + " world rank " + std::to_string(rank));
    ProcessGroups groups(MPI_COMM_WORLD, dims);
    const GridCoord c = groups.coord();
    // The stated ordering, written out independently of rank_of().
    EXPECT_EQ(rank, c.tp + dims.tp * c.sp + dims.tp * dims.sp * c.dp +
                        dims.tp * dims.sp * dims.dp * c.pp);
    EXPECT_EQ(groups.tp().rank(), c.tp);
    EXPECT_EQ(groups.sp().rank(), c.sp);
    EXPECT_EQ(groups.dp().rank(), c.dp);
    EXPECT_EQ(groups.pp().rank(), c.pp);
    EXPECT_EQ(members(groups.tp()), expected(dims, c, &GridCoord::tp, dims.tp));
    EXPECT_EQ(members(groups.sp()), expected(dims, c, &GridCoord::sp, dims.sp));
    EXPECT_EQ(members(groups.dp()), expected(dims, c, &GridCoord::dp, dims.dp));
    EXPECT_EQ(members(groups.pp()), expected(dims, c, &GridCoord::pp, dims.pp));
    EXPECT_EQ(members(groups.zero()), members(groups.dp()));
    EXPECT_EQ(groups.world().size(), world);
    EXPECT_EQ(groups.tp().kind(), comm::GroupKind::kTp);
    EXPECT_EQ(groups.zero().kind(), comm::GroupKind::kZero);
    // The same, read from the mesh table: every row's group has its kind,
    // and holds the ranks that differ from this one along its dimension only.
    for (const MeshDimInfo& d : kMesh) {
      SCOPED_TRACE(comm::to_string(d.group));
      EXPECT_EQ(groups.group(d.group).kind(), d.group);
      EXPECT_EQ(groups.group(d.group).rank(), c.*d.coord);
      EXPECT_EQ(members(groups.group(d.group)), expected(dims, c, d.coord, dims.*d.size));
    }
  }
}

TEST(ProcessGrid, WrongWorldSizeNamesTheLayout) {
  int world = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  ParallelDims dims;
  dims.dp = world + 1;
  try {
    ProcessGroups groups(MPI_COMM_WORLD, dims);
    FAIL() << "expected LayoutError";
  } catch (const LayoutError& e) {
    EXPECT_NE(std::string(e.what()).find("needs " + std::to_string(world + 1) + " ranks"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace cmpi::parallel
