// Compressed point-to-point transfers: ranks 2i and 2i+1 exchange buffers of
// every test length and chunk size. Lossless codecs must deliver the sender's
// bits (NaN payloads, -0.0 and denormals included); zfp in accuracy mode
// every value within its tolerance. A receiver whose expectation differs
// from the sender's (element count, codec, codec parameters, chunk size)
// gets a TransferError naming the group, the sending rank and the field.
#include <gtest/gtest.h>

#include "comm/algorithms/chunk_frame.h"
#include "comm/algorithms/chunk_payload.h"
#include "comm/algorithms/compressed_collectives.h"
#include "comm/algorithms/transfer_error.h"
#include "compress/payload.h"
#include "tests/comm/compressed_test_support.h"

namespace cmpi::comm {
namespace {

using namespace cmpi::testing;

constexpr uint64_t kTestId = 1;

void exchange_pairs(compress::Codec& codec) {
  PrivateComm pc;
  const int partner = pc.rank() ^ 1;
  const bool lossless = codec.lossless();
  uint64_t test_case = 0;
  for (size_t n : test_lengths()) {
    for (size_t chunk : chunk_sizes_for(n)) {
      ++test_case;
      SCOPED_TRACE("n " + std::to_string(n) + ", chunk_elems " + std::to_string(chunk) + ", rank " +
                   std::to_string(pc.rank()));
      if (partner >= pc.size()) continue;
      CompressedContext ctx = make_context(pc, &codec, chunk);
      std::vector<float> mine = make_data(stream_id(kTestId, test_case, pc.rank()), n, lossless);
      std::vector<float> got(n, -7.0f);
      if (pc.rank() % 2 == 0) {
        compressed_send(ctx, mine.data(), n, partner);
        compressed_recv(ctx, got.data(), n, partner);
      } else {
        compressed_recv(ctx, got.data(), n, partner);
        compressed_send(ctx, mine.data(), n, partner);
      }
      std::vector<float> sent = make_data(stream_id(kTestId, test_case, partner), n, lossless);
      if (lossless)
        EXPECT_TRUE(same_bits(got, sent));
      else
        EXPECT_TRUE(within(
            got.data(), sent.data(), [](size_t) { return kZfpTolerance; }, n));
    }
  }
}

TEST(CompressedP2p, IdentityDeliversTheSendersBits) {
  CMPI_REQUIRE_CODEC(codec, "identity");
  exchange_pairs(*codec);
}

TEST(CompressedP2p, MpcDeliversTheSendersBits) {
  CMPI_REQUIRE_CODEC(codec, "mpc");
  exchange_pairs(*codec);
}

TEST(CompressedP2p, ZfpAccuracyStaysWithinTolerance) {
  CMPI_REQUIRE_CODEC(codec, zfp_accuracy_spec());
  exchange_pairs(*codec);
}

// With the identity codec every chunk costs a frame, and each of its codec
// steps a payload header (plus, with more than one step, a 4-byte entry in the
// chunk's step table) and its floats; the counters must say exactly that, and
// time the codec.
TEST(CompressedP2p, CountersChargeWireBytesAndCodecTime) {
  CMPI_REQUIRE_CODEC(codec, "identity");
  PrivateComm pc;
  if (pc.rank() > 1) return;
  const size_t n = (size_t(1) << 20) + 3, chunk = size_t(1) << 18;
  OpCounters counters;
  CompressedContext ctx = make_context(pc, codec.get(), chunk, &counters);
  std::vector<float> data = make_data(stream_id(kTestId, 900, pc.rank()), n, true);
  if (pc.rank() == 0) {
    compressed_send(ctx, data.data(), n, 1);
    // 4 full chunks of 16 steps each, then one of 3 elements in one step.
    const size_t full_steps = chunk / kCodecStepElems;
    ASSERT_EQ(full_steps, codec_step_count(chunk));
    const size_t full_chunk = kChunkFrameBytes + full_steps * (4 + compress::kPayloadHeaderBytes);
    const size_t last_chunk = kChunkFrameBytes + compress::kPayloadHeaderBytes;
    EXPECT_EQ(counters.wire_bytes, 4 * full_chunk + last_chunk + n * sizeof(float));
    EXPECT_GT(counters.encode_seconds, 0.0);
    EXPECT_EQ(counters.decode_seconds, 0.0);
  } else {
    compressed_recv(ctx, data.data(), n, 0);
    EXPECT_EQ(counters.wire_bytes, 0u);  // bytes are charged where they are sent
    EXPECT_GT(counters.decode_seconds, 0.0);
    EXPECT_GE(counters.wire_seconds, 0.0);
  }
}

// Rank 0 sends one small chunk (delivered eagerly), rank 1 expects something
// else: the error must name the field, group and ranks, and the message is
// consumed, so the job can go on to the next test.
void expect_mismatch(compress::Codec& send_codec, size_t send_n, size_t send_chunk,
                     compress::Codec& recv_codec, size_t recv_n, size_t recv_chunk,
                     const std::string& field) {
  PrivateComm pc;
  if (pc.rank() == 0) {
    CompressedContext ctx = make_context(pc, &send_codec, send_chunk);
    std::vector<float> data = make_data(stream_id(kTestId, 901, 0), send_n, false);
    compressed_send(ctx, data.data(), send_n, 1);
  } else if (pc.rank() == 1) {
    CompressedContext ctx = make_context(pc, &recv_codec, recv_chunk);
    std::vector<float> data(recv_n);
    try {
      compressed_recv(ctx, data.data(), recv_n, 0);
      ADD_FAILURE() << "expected a TransferError on field " << field;
    } catch (const TransferError& e) {
      EXPECT_EQ(e.field(), field) << e.what();
      std::string what = e.what();
      EXPECT_NE(what.find("group world"), std::string::npos) << what;
      EXPECT_NE(what.find("rank 1 receiving from rank 0"), std::string::npos) << what;
      EXPECT_NE(what.find(field + ": "), std::string::npos) << what;
    }
  }
  MPI_Barrier(pc.comm());
}

TEST(CompressedP2pMismatch, ElementCountIsNamed) {
  CMPI_REQUIRE_CODEC(codec, "identity");
  expect_mismatch(*codec, 7, 64, *codec, 8, 64, "element count");
}

TEST(CompressedP2pMismatch, ChunkSizeIsNamed) {
  CMPI_REQUIRE_CODEC(codec, "identity");
  expect_mismatch(*codec, 7, 7, *codec, 7, 3, "chunk_elems");
}

TEST(CompressedP2pMismatch, CodecIsNamed) {
  CMPI_REQUIRE_CODEC(identity, "identity");
  CMPI_REQUIRE_CODEC(mpc, "mpc");
  expect_mismatch(*identity, 7, 64, *mpc, 7, 64, "codec");
}

TEST(CompressedP2pMismatch, CodecParametersAreNamed) {
  CMPI_REQUIRE_CODEC(fine, "zfp:mode=accuracy,tolerance=0.001");
  CMPI_REQUIRE_CODEC(coarse, "zfp:mode=accuracy,tolerance=0.1");
  expect_mismatch(*fine, 7, 64, *coarse, 7, 64, "codec parameters");
}

TEST(CompressedP2p, BadPeerIsRejectedBeforeAnyTransfer) {
  CMPI_REQUIRE_CODEC(codec, "identity");
  PrivateComm pc;
  CompressedContext ctx = make_context(pc, codec.get(), 64);
  float x = 1.0f;
  EXPECT_THROW(compressed_send(ctx, &x, 1, pc.size()), std::invalid_argument);
  EXPECT_THROW(compressed_recv(ctx, &x, 1, -1), std::invalid_argument);
  EXPECT_THROW(compressed_send(ctx, &x, 1, pc.rank()), std::invalid_argument);
  ctx.chunk_elems = 0;
  EXPECT_THROW(compressed_send(ctx, &x, 1, (pc.rank() + 1) % pc.size()), std::invalid_argument);
}

}  // namespace
}  // namespace cmpi::comm
