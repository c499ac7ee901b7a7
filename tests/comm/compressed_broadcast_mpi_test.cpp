// Compressed chain broadcast from several roots, for every test length and
// chunk size, against MPI_Bcast. Lossless codecs: root's bits everywhere,
// root's own buffer untouched. zfp accuracy mode: within tolerance of the
// root's input on every rank, and the same bits on every rank, root included.
#include <gtest/gtest.h>

#include <set>

#include "comm/algorithms/compressed_collectives.h"
#include "tests/comm/compressed_test_support.h"

namespace cmpi::comm {
namespace {

using namespace cmpi::testing;

constexpr uint64_t kTestId = 5;

void check_broadcast(compress::Codec& codec) {
  PrivateComm pc;
  const bool lossless = codec.lossless();
  const std::set<int> roots = {0, pc.size() - 1, pc.size() / 2};
  uint64_t test_case = 0;
  for (size_t n : test_lengths()) {
    for (int root : roots) {
      for (size_t chunk : chunk_sizes_for(n)) {
        ++test_case;
        SCOPED_TRACE("n " + std::to_string(n) + ", root " + std::to_string(root) +
                     ", chunk_elems " + std::to_string(chunk) + ", rank " +
                     std::to_string(pc.rank()));
        const std::vector<float> original =
            make_data(stream_id(kTestId, test_case, root), n, lossless);
        // Non-roots start from other data, so stale values cannot pass.
        std::vector<float> data =
            pc.rank() == root
                ? original
                : make_data(stream_id(kTestId, test_case, 1000 + pc.rank()), n, lossless);
        std::vector<float> want = data;
        CompressedContext ctx = make_context(pc, &codec, chunk);
        chain_broadcast(ctx, data.data(), n, root);
        MPI_Bcast(want.data(), int(n), MPI_FLOAT, root, pc.comm());
        if (lossless) {
          EXPECT_TRUE(same_bits(data, want));
        } else {
          EXPECT_TRUE(within(
              data.data(), original.data(), [](size_t) { return kZfpTolerance; }, n));
          EXPECT_TRUE(same_on_all_ranks(pc.comm(), data.data(), n));
        }
      }
    }
  }
}

TEST(CompressedBroadcast, IdentityEqualsMpiBcast) {
  CMPI_REQUIRE_CODEC(codec, "identity");
  check_broadcast(*codec);
}

TEST(CompressedBroadcast, MpcEqualsMpiBcast) {
  CMPI_REQUIRE_CODEC(codec, "mpc");
  check_broadcast(*codec);
}

TEST(CompressedBroadcast, ZfpAccuracyWithinToleranceAndSameOnAllRanks) {
  CMPI_REQUIRE_CODEC(codec, zfp_accuracy_spec());
  check_broadcast(*codec);
}

TEST(CompressedBroadcast, RootOutsideTheGroupIsRejected) {
  CMPI_REQUIRE_CODEC(codec, "identity");
  PrivateComm pc;
  CompressedContext ctx = make_context(pc, codec.get(), 64);
  float x = 0;
  try {
    chain_broadcast(ctx, &x, 1, pc.size());
    ADD_FAILURE() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("root " + std::to_string(pc.size())), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace cmpi::comm
