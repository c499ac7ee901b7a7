// Compressed ring allgather against MPI_Allgatherv, for every test length per
// rank, even and ragged counts (zero for every third rank) and every chunk
// size. Lossless codecs: the same bits as MPI_Allgatherv. zfp accuracy mode:
// one encoding per value, so within its tolerance, and every rank (the owner
// of a segment included) holds the same bits.
#include <gtest/gtest.h>

#include "comm/algorithms/compressed_collectives.h"
#include "tests/comm/compressed_test_support.h"

namespace cmpi::comm {
namespace {

using namespace cmpi::testing;

constexpr uint64_t kTestId = 2;

std::vector<size_t> per_rank_counts(size_t length, int ranks, bool ragged) {
  std::vector<size_t> counts(ranks, length);
  if (ragged && length > 0)
    for (int j = 0; j < ranks; ++j) counts[j] = (j % 3 == 1) ? 0 : length + size_t(j);
  return counts;
}

void check_allgather(compress::Codec& codec) {
  PrivateComm pc;
  const bool lossless = codec.lossless();
  uint64_t test_case = 0;
  for (size_t length : test_lengths()) {
    for (bool ragged : {false, true}) {
      const std::vector<size_t> counts = per_rank_counts(length, pc.size(), ragged);
      const size_t total = total_of(counts);
      std::vector<int> int_counts(counts.begin(), counts.end()), displs(pc.size(), 0);
      for (int j = 1; j < pc.size(); ++j) displs[j] = displs[j - 1] + int_counts[j - 1];
      for (size_t chunk : chunk_sizes_for(length)) {
        ++test_case;
        SCOPED_TRACE("length " + std::to_string(length) + (ragged ? " ragged" : " even") +
                     ", chunk_elems " + std::to_string(chunk) + ", rank " +
                     std::to_string(pc.rank()));
        CompressedContext ctx = make_context(pc, &codec, chunk);
        std::vector<float> in =
            make_data(stream_id(kTestId, test_case, pc.rank()), counts[pc.rank()], lossless);
        std::vector<float> out(total, -3.0f), want(total);
        ring_allgather(ctx, in.data(), out.data(), counts);
        MPI_Allgatherv(in.data(), int_counts[pc.rank()], MPI_FLOAT, want.data(), int_counts.data(),
                       displs.data(), MPI_FLOAT, pc.comm());
        if (lossless) {
          EXPECT_TRUE(same_bits(out, want));
        } else {
          EXPECT_TRUE(within(
              out.data(), want.data(), [](size_t) { return kZfpTolerance; }, total));
          EXPECT_TRUE(same_on_all_ranks(pc.comm(), out.data(), total));
        }
      }
    }
  }
}

TEST(CompressedAllgather, IdentityEqualsMpiAllgatherv) {
  CMPI_REQUIRE_CODEC(codec, "identity");
  check_allgather(*codec);
}

TEST(CompressedAllgather, MpcEqualsMpiAllgatherv) {
  CMPI_REQUIRE_CODEC(codec, "mpc");
  check_allgather(*codec);
}

TEST(CompressedAllgather, ZfpAccuracyWithinToleranceAndSameOnAllRanks) {
  CMPI_REQUIRE_CODEC(codec, zfp_accuracy_spec());
  check_allgather(*codec);
}

TEST(CompressedAllgather, WrongNumberOfCountsIsRejected) {
  CMPI_REQUIRE_CODEC(codec, "identity");
  PrivateComm pc;
  CompressedContext ctx = make_context(pc, codec.get(), 64);
  std::vector<size_t> counts(pc.size() + 1, 1);
  std::vector<float> in(1), out(counts.size());
  try {
    ring_allgather(ctx, in.data(), out.data(), counts);
    ADD_FAILURE() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("counts has " + std::to_string(pc.size() + 1)),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace cmpi::comm
