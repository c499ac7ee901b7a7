// Locality-aware routing: with ranks grouped into nodes of two (node =
// rank / 2), a rule that matches only inter-node traffic compresses the
// collectives of groups that span nodes and messages between nodes, and
// leaves traffic inside a node raw. Stats split the wire bytes accordingly.
#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "comm/policy.h"
#include "tests/support/mpi_world.h"

namespace cmpi::comm {
namespace {

using testing::world_rank;
using testing::world_size;

constexpr int kRanksPerNode = 2;

// Identity codec for inter-node messages of any size, nothing else.
Policy inter_only_policy() {
  PolicyConfig config;
  PolicyRule rule;
  rule.match.min_bytes = 0;
  rule.match.localities = {Locality::kInter};
  rule.codec = compress::CodecSpec("identity");
  rule.origin = "inter-node identity";
  config.rules.push_back(rule);
  return Policy(config);
}

std::unique_ptr<Communicator> make_comm(MPI_Comm parent, int color, const Policy& policy) {
  MPI_Comm comm;
  MPI_Comm_split(parent, color, world_rank(), &comm);
  return std::make_unique<Communicator>(comm, GroupKind::kDp,
                                        std::make_unique<PolicySlice>(policy, GroupKind::kDp),
                                        world_rank() / kRanksPerNode);
}

TEST(Locality, CommunicatorLearnsTheNodeOfEveryRank) {
  const Policy policy = inter_only_policy();
  auto world = make_comm(MPI_COMM_WORLD, 0, policy);
  for (int r = 0; r < world->size(); ++r) EXPECT_EQ(world->node_of(r), r / kRanksPerNode);
  EXPECT_EQ(world->spans_nodes(), world_size() > kRanksPerNode);
  // Without a node id the communicator asks MPI: one machine, one node.
  MPI_Comm copy;
  MPI_Comm_dup(MPI_COMM_WORLD, &copy);
  Communicator detected(copy, GroupKind::kWorld);
  EXPECT_FALSE(detected.spans_nodes());
}

TEST(Locality, CollectivesCompressOnlyWhenTheGroupSpansNodes) {
  const Policy policy = inter_only_policy();
  auto world = make_comm(MPI_COMM_WORLD, 0, policy);
  auto node = make_comm(MPI_COMM_WORLD, world_rank() / kRanksPerNode, policy);
  const size_t n = 4096;
  for (Communicator* comm : {world.get(), node.get()}) {
    std::vector<float> data(n, 1.0f + float(world_rank()));
    comm->allreduce(data.data(), n, Role::kGradient);
    float expected = 0;
    for (int r = 0; r < comm->size(); ++r) expected += 1.0f + float(r);
    if (comm == node.get()) {
      expected = 0;
      for (int r = 0; r < world_size(); ++r)
        if (r / kRanksPerNode == world_rank() / kRanksPerNode) expected += 1.0f + float(r);
    }
    EXPECT_EQ(data[0], expected);
    EXPECT_EQ(data[n - 1], expected);
    const OpCounters& c = comm->stats().at(Op::kAllreduce);
    EXPECT_EQ(c.calls, 1u);
    EXPECT_EQ(c.intra_wire_bytes + c.inter_wire_bytes, c.wire_bytes);
    if (comm->spans_nodes()) {
      EXPECT_EQ(c.compressed_calls, 1u) << "a group across nodes is inter-node";
      EXPECT_EQ(c.intra_wire_bytes, 0u);
      EXPECT_GT(c.inter_wire_bytes, 0u);
    } else {
      EXPECT_EQ(c.compressed_calls, 0u) << "a group inside one node stays raw";
      EXPECT_EQ(c.inter_wire_bytes, 0u);
      if (comm->size() > 1) EXPECT_GT(c.intra_wire_bytes, 0u);
    }
  }
}

TEST(Locality, PointToPointFollowsThePeersNodes) {
  if (world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  const Policy policy = inter_only_policy();
  auto world = make_comm(MPI_COMM_WORLD, 0, policy);
  const int rank = world->rank(), size = world->size();
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  const size_t n = 1000;
  std::vector<float> out(n, float(rank)), in(n, -1.0f);
  world->sendrecv(out.data(), n, right, in.data(), n, left, 7, Role::kActivation);
  EXPECT_EQ(in[0], float(left));
  EXPECT_EQ(in[n - 1], float(left));
  const OpCounters& c = world->stats().at(Op::kSendRecv);
  const bool right_is_remote = world->node_of(right) != world->node_of(rank);
  EXPECT_EQ(world->peer_locality(right) == Locality::kInter, right_is_remote);
  EXPECT_EQ(c.compressed_calls, right_is_remote ? 1u : 0u);
  if (right == rank) return;
  EXPECT_EQ(right_is_remote ? c.inter_wire_bytes : c.intra_wire_bytes, c.wire_bytes);
}

}  // namespace
}  // namespace cmpi::comm
