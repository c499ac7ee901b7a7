// Compressed alltoall against MPI_Alltoallv: every test length is one rank's
// total outgoing data, split over the destinations evenly or raggedly (some
// blocks empty, the pattern rotating with the sender), for every chunk size.
// Lossless codecs: MPI's bits. zfp accuracy mode: within tolerance, and the
// block a rank sends itself exact (it never leaves the rank).
#include <gtest/gtest.h>

#include "comm/algorithms/compressed_collectives.h"
#include "tests/comm/compressed_test_support.h"

namespace cmpi::comm {
namespace {

using namespace cmpi::testing;

constexpr uint64_t kTestId = 6;

// Elements rank `from` sends rank `to` out of its `length`.
size_t block_count(size_t length, int ranks, int from, int to, bool ragged) {
  std::vector<size_t> counts = split_counts(length, ranks, ragged);
  return counts[(to - from + ranks) % ranks];  // rotate so every rank's pattern differs
}

void check_alltoall(compress::Codec& codec) {
  PrivateComm pc;
  const int ranks = pc.size(), me = pc.rank();
  const bool lossless = codec.lossless();
  uint64_t test_case = 0;
  for (size_t length : test_lengths()) {
    for (bool ragged : {false, true}) {
      std::vector<size_t> send_counts(ranks), recv_counts(ranks);
      for (int j = 0; j < ranks; ++j) {
        send_counts[j] = block_count(length, ranks, me, j, ragged);
        recv_counts[j] = block_count(length, ranks, j, me, ragged);
      }
      std::vector<int> sc(send_counts.begin(), send_counts.end()),
          rc(recv_counts.begin(), recv_counts.end()), sd(ranks, 0), rd(ranks, 0);
      for (int j = 1; j < ranks; ++j) {
        sd[j] = sd[j - 1] + sc[j - 1];
        rd[j] = rd[j - 1] + rc[j - 1];
      }
      const size_t recv_total = total_of(recv_counts);
      for (size_t chunk : chunk_sizes_for(length)) {
        ++test_case;
        SCOPED_TRACE("length " + std::to_string(length) + (ragged ? " ragged" : " even") +
                     ", chunk_elems " + std::to_string(chunk) + ", rank " + std::to_string(me));
        std::vector<float> in = make_data(stream_id(kTestId, test_case, me), length, lossless);
        std::vector<float> out(recv_total, -9.0f), want(recv_total);
        CompressedContext ctx = make_context(pc, &codec, chunk);
        compressed_alltoall(ctx, in.data(), send_counts, out.data(), recv_counts);
        MPI_Alltoallv(in.data(), sc.data(), sd.data(), MPI_FLOAT, want.data(), rc.data(), rd.data(),
                      MPI_FLOAT, pc.comm());
        if (lossless) {
          EXPECT_TRUE(same_bits(out, want));
        } else {
          EXPECT_TRUE(within(
              out.data(), want.data(), [](size_t) { return kZfpTolerance; }, recv_total));
          EXPECT_TRUE(same_bits(out.data() + rd[me], want.data() + rd[me], recv_counts[me]))
              << "own block";
        }
      }
    }
  }
}

TEST(CompressedAlltoall, IdentityEqualsMpiAlltoallv) {
  CMPI_REQUIRE_CODEC(codec, "identity");
  check_alltoall(*codec);
}

TEST(CompressedAlltoall, MpcEqualsMpiAlltoallv) {
  CMPI_REQUIRE_CODEC(codec, "mpc");
  check_alltoall(*codec);
}

TEST(CompressedAlltoall, ZfpAccuracyWithinTolerance) {
  CMPI_REQUIRE_CODEC(codec, zfp_accuracy_spec());
  check_alltoall(*codec);
}

}  // namespace
}  // namespace cmpi::comm
