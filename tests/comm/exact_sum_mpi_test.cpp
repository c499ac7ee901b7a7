// The Communicator's exact sums (comm/communicator_exact.cpp): two groups of
// the same size whose ranks hold the same inputs position by position get
// the same bits back, whatever their policies say (here one group's policy
// sends everything through zfp at 8 bits with error feedback, the other's
// through the plain path), and the sum is lossless. The world is cut into
// two halves: with 4 ranks two pairs (the MPI path), with 8 two groups of 4
// (the project's ring).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "comm/communicator.h"
#include "comm/policy.h"
#include "tests/support/mpi_world.h"
#include "tests/support/test_seed.h"

namespace cmpi::comm {
namespace {

using testing::world_rank;
using testing::world_size;

// What position `rank` of either group contributes.
std::vector<float> input_of(int rank, size_t n) {
  std::mt19937_64 gen(cmpi::testing::test_seed() ^ (uint64_t(rank + 1) << 40));
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen) * 3.0f + 0.5f;
  return v;
}

PolicyConfig lossy_everywhere() {
  PolicyConfig config;
  PolicyRule rule;
  rule.match.min_bytes = 0;
  rule.codec = compress::CodecSpec("zfp", {{"mode", "rate"}, {"rate", "8"}});
  rule.error_feedback = true;
  rule.origin = "test: zfp rate 8 on everything";
  config.rules.push_back(rule);
  config.chunk_bytes = 4096;  // several chunks per call
  return config;
}

// Sends `mine` to the same position of the other half, returns what it sent.
std::vector<float> from_other_half(const std::vector<float>& mine) {
  const int half = world_size() / 2, rank = world_rank();
  const int peer = rank < half ? rank + half : rank - half;
  std::vector<float> theirs(mine.size());
  MPI_Sendrecv(mine.data(), int(mine.size()), MPI_FLOAT, peer, 11, theirs.data(),
               int(theirs.size()), MPI_FLOAT, peer, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return theirs;
}

TEST(ExactSum, GroupsOfTheSameSizeReturnTheSameBitsWhateverTheirPolicies) {
  if (world_size() % 2 != 0 || world_size() < 4) GTEST_SKIP() << "needs two halves of 2+ ranks";
  const int half = world_size() / 2;
  const bool first_half = world_rank() < half;
  MPI_Comm comm;
  MPI_Comm_split(MPI_COMM_WORLD, first_half ? 0 : 1, world_rank(), &comm);
  const Policy lossy(lossy_everywhere());
  const Policy none;
  Communicator group(comm, GroupKind::kDp,
                     std::make_unique<PolicySlice>(first_half ? lossy : none, GroupKind::kDp));
  const int rank = group.rank();
  const size_t n = 10007;  // uneven ring segments, several chunks

  for (int call = 0; call < 2; ++call) {  // the second with error feedback's residuals, if any
    SCOPED_TRACE("call " + std::to_string(call) + ", seed " +
                 std::to_string(cmpi::testing::test_seed()));
    std::vector<float> sum = input_of(rank + 10 * call, n);
    group.exact_allreduce(sum.data(), n, /*buffer_key=*/7);
    const auto other = from_other_half(sum);
    EXPECT_EQ(std::memcmp(sum.data(), other.data(), n * sizeof(float)), 0)
        << "allreduce: the halves' sums differ";
    // Lossless: the float sum in some order, within its rounding.
    for (size_t i = 0; i < n; i += 97) {
      double exact = 0, magnitude = 0;
      for (int r = 0; r < half; ++r) {
        const double x = input_of(r + 10 * call, n)[i];
        exact += x;
        magnitude += std::abs(x);
      }
      EXPECT_NEAR(sum[i], exact, double(half) * 1.2e-7 * magnitude) << "element " << i;
    }

    const std::vector<size_t> counts(size_t(half), n / size_t(half));
    const std::vector<float> in = input_of(rank + 100 + call, n / size_t(half) * size_t(half));
    std::vector<float> piece(counts[0]);
    group.exact_reduce_scatter(in.data(), piece.data(), counts, /*buffer_key=*/8);
    const auto other_piece = from_other_half(piece);
    EXPECT_EQ(std::memcmp(piece.data(), other_piece.data(), piece.size() * sizeof(float)), 0)
        << "reduce-scatter: the halves' pieces differ";
  }
  // The policy was never asked: no call of either op went through a codec.
  EXPECT_EQ(group.stats().at(Op::kAllreduce).compressed_calls, 0u);
  EXPECT_EQ(group.stats().at(Op::kReduceScatter).compressed_calls, 0u);
  EXPECT_EQ(group.stats().at(Op::kAllreduce).calls, 2u);
  EXPECT_EQ(group.stats().at(Op::kReduceScatter).calls, 2u);
}

}  // namespace
}  // namespace cmpi::comm
