// Progress inside codec work: chunk payloads cut into codec steps, and the
// Progress that keeps a call's requests moving between steps.
//
// - Steps change no decoded bits where the codec codes independent blocks
//   (lossless codecs, zfp in rate mode), and a step table that does not add
//   up is rejected before anything is decoded.
// - poll() alone completes tracked requests above the eager limit, and starts
//   incoming transfers from one source in the order they were registered:
//   rank 0's two compressed sends complete while rank 1 does nothing but poll,
//   then both transfers deliver the sender's bits.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "comm/algorithms/chunk_payload.h"
#include "comm/algorithms/chunk_transfer.h"
#include "comm/algorithms/compressed_collectives.h"
#include "comm/algorithms/progress.h"
#include "compress/byte_order.h"
#include "compress/payload.h"
#include "tests/comm/compressed_test_support.h"

namespace cmpi::comm {
namespace {

using namespace cmpi::testing;

constexpr uint64_t kTestId = 31;

// Lengths of one step (shorter than kCodecStepElems, exactly, a little
// longer), two and many steps, with ragged last steps.
std::vector<size_t> step_lengths() {
  return {
      1, 7, kCodecStepElems, kCodecStepElems + 1, 2 * kCodecStepElems + 3, 5 * kCodecStepElems + 7};
}

// Encodes data in steps and decodes it again; returns the decoded floats.
std::vector<float> round_trip_in_steps(const PrivateComm& pc, compress::Codec& codec,
                                       const std::vector<float>& data) {
  CompressedContext ctx = make_context(pc, &codec, data.size());
  Progress progress(ctx);
  std::vector<uint8_t> payload(chunk_payload_bound(codec, data.size()));
  size_t bytes = encode_chunk_payload(ctx, progress, data.data(), data.size(), payload.data(),
                                      payload.size(), nullptr);
  EXPECT_LE(bytes, payload.size());
  std::vector<float> out(data.size(), -7.0f);
  decode_chunk_payload(ctx, progress, payload.data(), bytes, out.data(), out.size());
  return out;
}

void expect_steps_change_no_bits(const std::string& spec, bool specials) {
  CMPI_REQUIRE_CODEC(codec, spec);
  PrivateComm pc;
  if (pc.rank() != 0) return;
  uint64_t test_case = 0;
  for (size_t n : step_lengths()) {
    SCOPED_TRACE(spec + ", n " + std::to_string(n));
    std::vector<float> data = make_data(stream_id(kTestId, ++test_case, 0), n, specials);
    // Today's reference: one codec call over the whole chunk.
    std::vector<uint8_t> whole = codec->encode(data.data(), n);
    std::vector<float> want(n);
    codec->decode(whole.data(), whole.size(), want.data(), n);
    EXPECT_TRUE(same_bits(round_trip_in_steps(pc, *codec, data), want));
  }
}

TEST(CompressedSteps, IdentityStepsChangeNoBits) {
  expect_steps_change_no_bits("identity", true);
}
TEST(CompressedSteps, MpcStepsChangeNoBits) {
  expect_steps_change_no_bits("mpc", true);
}
TEST(CompressedSteps, ZfpRateStepsChangeNoBits) {
  expect_steps_change_no_bits("zfp:mode=rate,rate=8", false);
}

TEST(CompressedSteps, OneStepHasNoTableAndFeedbackKeysStayPerChunk) {
  CMPI_REQUIRE_CODEC(codec, "identity");
  EXPECT_EQ(chunk_payload_bound(*codec, 0), 0u);
  EXPECT_EQ(chunk_payload_bound(*codec, kCodecStepElems),
            codec->max_encoded_bytes(kCodecStepElems));
  EXPECT_EQ(codec_step_count(2 * kCodecStepElems - 1), 1u);  // the tail joins the step
  EXPECT_EQ(chunk_payload_bound(*codec, 2 * kCodecStepElems - 1),
            codec->max_encoded_bytes(2 * kCodecStepElems - 1));
  EXPECT_EQ(codec_step_count(3 * kCodecStepElems - 1), 2u);
  EXPECT_EQ(chunk_payload_bound(*codec, 3 * kCodecStepElems - 1),
            8 + codec->max_encoded_bytes(kCodecStepElems) +
                codec->max_encoded_bytes(2 * kCodecStepElems - 1));
  EXPECT_EQ(step_feedback_key(42, 1, 0), 42u);
  EXPECT_NE(step_feedback_key(42, 2, 0), 42u);
  EXPECT_NE(step_feedback_key(42, 2, 0), step_feedback_key(42, 2, 1));
}

TEST(CompressedSteps, StepTableThatDoesNotAddUpIsRejected) {
  CMPI_REQUIRE_CODEC(codec, "identity");
  PrivateComm pc;
  if (pc.rank() != 0) return;
  const size_t n = 3 * kCodecStepElems + 3;  // three steps: a 12-byte table
  std::vector<float> data = make_data(stream_id(kTestId, 100, 0), n, false);
  CompressedContext ctx = make_context(pc, codec.get(), n);
  Progress progress(ctx);
  std::vector<uint8_t> payload(chunk_payload_bound(*codec, n));
  size_t bytes =
      encode_chunk_payload(ctx, progress, data.data(), n, payload.data(), payload.size(), nullptr);
  std::vector<float> out(n);
  auto field_of = [&](const std::vector<uint8_t>& bad, size_t size) -> std::string {
    try {
      decode_chunk_payload(ctx, progress, bad.data(), size, out.data(), n);
    } catch (const compress::DecodeError& e) {
      return e.field();
    }
    return "(accepted)";
  };
  std::vector<uint8_t> bad = payload;
  compress::store_le32(bad.data() + 4, compress::load_le32(bad.data() + 4) + 1);
  EXPECT_EQ(field_of(bad, bytes), "body");          // sizes add up to one byte more
  EXPECT_EQ(field_of(payload, bytes - 1), "body");  // payload one byte short
  EXPECT_EQ(field_of(payload, 8), "body");          // not even the table
  // Steps swapped in size with the same total: the codec names the bad step.
  bad = payload;
  uint32_t first = compress::load_le32(bad.data()), last = compress::load_le32(bad.data() + 8);
  compress::store_le32(bad.data(), last);
  compress::store_le32(bad.data() + 8, first);
  EXPECT_NE(field_of(bad, bytes), "(accepted)");
  EXPECT_EQ(field_of(payload, bytes), "(accepted)");  // the intact payload still decodes
}

TEST(CompressedProgress, PollAloneCompletesRendezvousRequests) {
  PrivateComm pc;
  if (pc.rank() > 1) return;
  CMPI_REQUIRE_CODEC(codec, "identity");
  CompressedContext ctx = make_context(pc, codec.get(), 1024);
  Progress progress(ctx);
  // Far above any eager limit, and one small message.
  const std::vector<int> sizes = {1 << 20, 5, 3 << 18};
  std::vector<std::vector<float>> buffers;
  std::vector<Progress::RequestId> ids;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (pc.rank() == 0)
      buffers.push_back(make_data(stream_id(kTestId, 200 + i, 0), size_t(sizes[i]), false));
    else
      buffers.emplace_back(size_t(sizes[i]), 0.0f);
    MPI_Request request = MPI_REQUEST_NULL;
    if (pc.rank() == 0)
      MPI_Isend(buffers[i].data(), sizes[i], MPI_FLOAT, 1, 5, pc.comm(), &request);
    else
      MPI_Irecv(buffers[i].data(), sizes[i], MPI_FLOAT, 0, 5, pc.comm(), &request);
    ids.push_back(progress.track(request, pc.rank() == 1));
  }
  auto all_done = [&] {
    for (auto id : ids)
      if (!progress.done(id)) return false;
    return true;
  };
  while (!all_done()) progress.poll();
  if (pc.rank() == 1)
    for (size_t i = 0; i < sizes.size(); ++i) {
      int count = 0;
      MPI_Get_count(&progress.status(ids[i]), MPI_FLOAT, &count);
      EXPECT_EQ(count, sizes[i]);
      EXPECT_TRUE(same_bits(buffers[i],
                            make_data(stream_id(kTestId, 200 + i, 0), size_t(sizes[i]), false)));
    }
}

TEST(CompressedProgress, PollStartsTransfersFromOneSourceInOrder) {
  CMPI_REQUIRE_CODEC(codec, "identity");
  PrivateComm pc;
  if (pc.rank() > 1) return;
  // Chunks of 256 KiB (rendezvous), different lengths so that a transfer that
  // took the other's chunks would fail on the element count.
  const size_t chunk = size_t(1) << 16;
  const size_t n1 = 3 * chunk + 5, n2 = 2 * chunk + 1;
  CompressedContext ctx = make_context(pc, codec.get(), chunk);
  std::vector<float> a = make_data(stream_id(kTestId, 300, 0), n1, true);
  std::vector<float> b = make_data(stream_id(kTestId, 301, 0), n2, true);
  const int kDoneTag = 6;
  if (pc.rank() == 0) {
    compressed_send(ctx, a.data(), n1, 1);
    compressed_send(ctx, b.data(), n2, 1);
    MPI_Send(nullptr, 0, MPI_BYTE, 1, kDoneTag, pc.comm());
    return;
  }
  Progress progress(ctx);
  IncomingTransfer first(ctx, progress, 0, make_shape(ctx, Op::kSendRecv, n1, 0));
  IncomingTransfer second(ctx, progress, 0, make_shape(ctx, Op::kSendRecv, n2, 0));
  // Only poll until rank 0's sends have all completed: that needs both
  // transfers started and every chunk's receive posted by poll().
  for (int done = 0; !done;) {
    progress.poll();
    MPI_Iprobe(0, kDoneTag, pc.comm(), &done, MPI_STATUS_IGNORE);
  }
  MPI_Recv(nullptr, 0, MPI_BYTE, 0, kDoneTag, pc.comm(), MPI_STATUS_IGNORE);
  std::vector<float> got1(n1), got2(n2);
  for (auto [in, out] : {std::pair{&first, &got1}, std::pair{&second, &got2}}) {
    size_t k = 0;
    while (in->poll_next(k)) in->decode(k, out->data() + in->shape().chunk_offset(k));
    EXPECT_TRUE(in->done());  // everything had arrived: nothing to wait for
  }
  EXPECT_TRUE(same_bits(got1, a));
  EXPECT_TRUE(same_bits(got2, b));
}

}  // namespace
}  // namespace cmpi::comm
