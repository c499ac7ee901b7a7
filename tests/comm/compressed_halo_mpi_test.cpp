// Compressed halo exchange of a non-periodic 1-D decomposition: rank r sends
// distinct rows to r-1 and r+1, with even or ragged (some empty, sides
// differing) counts per boundary, for every test length and chunk size.
// Lossless codecs: the neighbours' bits. zfp accuracy mode: within tolerance.
// The missing side's buffers at either end stay untouched.
#include <gtest/gtest.h>

#include "comm/algorithms/compressed_collectives.h"
#include "tests/comm/compressed_test_support.h"

namespace cmpi::comm {
namespace {

using namespace cmpi::testing;

constexpr uint64_t kTestId = 7;
constexpr uint64_t kLoSide = 0, kHiSide = 1;

// Elements crossing boundary b (between ranks b and b+1) upwards / downwards.
size_t upward(size_t length, int b, bool ragged) {
  return !ragged || length == 0 ? length : (b % 3 == 1 ? 0 : length + size_t(b));
}
size_t downward(size_t length, int b, bool ragged) {
  return !ragged || length == 0 ? length : (b % 3 == 2 ? 0 : length + 2 * size_t(b));
}

void check_halo(compress::Codec& codec) {
  PrivateComm pc;
  const int me = pc.rank(), ranks = pc.size();
  const bool lossless = codec.lossless();
  const bool has_lo = me > 0, has_hi = me < ranks - 1;
  uint64_t test_case = 0;
  for (size_t length : test_lengths()) {
    for (bool ragged : {false, true}) {
      for (size_t chunk : chunk_sizes_for(length)) {
        ++test_case;
        SCOPED_TRACE("length " + std::to_string(length) + (ragged ? " ragged" : " even") +
                     ", chunk_elems " + std::to_string(chunk) + ", rank " + std::to_string(me));
        // At the ends the missing side gets a sentinel buffer that must survive.
        const size_t lo_in = has_lo ? upward(length, me - 1, ragged) : 5;
        const size_t lo_out = has_lo ? downward(length, me - 1, ragged) : 5;
        const size_t hi_in = has_hi ? downward(length, me, ragged) : 5;
        const size_t hi_out = has_hi ? upward(length, me, ragged) : 5;
        std::vector<float> send_lo =
            make_data(stream_id(kTestId, test_case, me, kLoSide), lo_out, lossless);
        std::vector<float> send_hi =
            make_data(stream_id(kTestId, test_case, me, kHiSide), hi_out, lossless);
        std::vector<float> recv_lo(lo_in, -11.0f), recv_hi(hi_in, -11.0f);
        HaloBuffers b;
        b.send_lo = send_lo.data();
        b.send_lo_count = send_lo.size();
        b.send_hi = send_hi.data();
        b.send_hi_count = send_hi.size();
        b.recv_lo = recv_lo.data();
        b.recv_lo_count = recv_lo.size();
        b.recv_hi = recv_hi.data();
        b.recv_hi_count = recv_hi.size();
        CompressedContext ctx = make_context(pc, &codec, chunk);
        halo_exchange(ctx, b);

        const std::vector<float> sentinel(5, -11.0f);
        auto expect_from = [&](const std::vector<float>& got, int peer, uint64_t side) {
          std::vector<float> sent =
              make_data(stream_id(kTestId, test_case, peer, side), got.size(), lossless);
          if (lossless)
            EXPECT_TRUE(same_bits(got, sent)) << "from rank " << peer;
          else
            EXPECT_TRUE(within(
                got.data(), sent.data(), [](size_t) { return kZfpTolerance; }, got.size()))
                << "from rank " << peer;
        };
        if (has_lo)
          expect_from(recv_lo, me - 1, kHiSide);
        else
          EXPECT_TRUE(same_bits(recv_lo, sentinel)) << "rank 0 has no lower neighbour";
        if (has_hi)
          expect_from(recv_hi, me + 1, kLoSide);
        else
          EXPECT_TRUE(same_bits(recv_hi, sentinel)) << "the last rank has no upper neighbour";
      }
    }
  }
}

TEST(CompressedHalo, IdentityDeliversTheNeighboursRows) {
  CMPI_REQUIRE_CODEC(codec, "identity");
  check_halo(*codec);
}

TEST(CompressedHalo, MpcDeliversTheNeighboursRows) {
  CMPI_REQUIRE_CODEC(codec, "mpc");
  check_halo(*codec);
}

TEST(CompressedHalo, ZfpAccuracyWithinTolerance) {
  CMPI_REQUIRE_CODEC(codec, zfp_accuracy_spec());
  check_halo(*codec);
}

TEST(CompressedHalo, NullBufferWithElementsIsRejected) {
  CMPI_REQUIRE_CODEC(codec, "identity");
  PrivateComm pc;
  CompressedContext ctx = make_context(pc, codec.get(), 64);
  HaloBuffers b;
  b.send_lo_count = b.send_hi_count = 3;  // pointers left null
  try {
    halo_exchange(ctx, b);
    ADD_FAILURE() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(pc.rank() > 0 ? "send_lo is null" : "send_hi is null"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace cmpi::comm
