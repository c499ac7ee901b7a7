// The chunk frame's operation byte against the table in chunk_frame.h: every
// Op is written as its fixed frame code and read back as itself, a byte that
// names no operation is not a frame, and the names the two spellings of an
// operation print (metrics/YAML and error messages) stay as they were.
#include "comm/algorithms/chunk_frame.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cmpi::comm {
namespace {

struct OpCase {
  Op op;
  uint8_t frame_code;
  std::string metrics_name;
  std::string call_name;
};

const std::vector<OpCase>& op_cases() {
  static const std::vector<OpCase> cases = {
      {Op::kSendRecv, 1, "p2p", "send/recv"},
      {Op::kAllgather, 2, "allgather", "allgather"},
      {Op::kReduceScatter, 3, "reduce_scatter", "reduce_scatter"},
      {Op::kAllreduce, 4, "allreduce", "allreduce"},
      {Op::kBroadcast, 5, "broadcast", "broadcast"},
      {Op::kAlltoall, 6, "alltoall", "alltoall"},
      {Op::kHalo, 7, "halo", "halo_exchange"},
  };
  return cases;
}

TEST(ChunkFrame, EveryOpTravelsAsItsFixedFrameCode) {
  ASSERT_EQ(op_cases().size(), size_t(kOpCount)) << "an Op is missing from this table";
  for (const OpCase& c : op_cases()) {
    ChunkFrame frame;
    frame.op = c.op;
    frame.total_elems = 1000;
    frame.chunk_elems = 256;
    frame.chunk_index = 2;
    frame.chunk_count = 4;
    frame.origin = 3;
    frame.chunk_bound = 4096;
    uint8_t bytes[kChunkFrameBytes] = {};
    write_chunk_frame(frame, bytes);
    EXPECT_EQ(bytes[5], c.frame_code) << c.call_name;
    ChunkFrame back;
    ASSERT_TRUE(read_chunk_frame(bytes, sizeof bytes, back)) << c.call_name;
    EXPECT_EQ(back.op, c.op) << c.call_name;
    EXPECT_EQ(back.total_elems, 1000u);
    EXPECT_EQ(back.origin, 3);
  }
}

TEST(ChunkFrame, AByteThatNamesNoOperationIsNotAFrame) {
  uint8_t bytes[kChunkFrameBytes] = {};
  write_chunk_frame(ChunkFrame{}, bytes);
  ChunkFrame frame;
  for (uint8_t code : {uint8_t(0), uint8_t(8), uint8_t(255)}) {
    bytes[5] = code;
    EXPECT_FALSE(read_chunk_frame(bytes, sizeof bytes, frame)) << "code " << int(code);
  }
}

TEST(ChunkFrame, OperationsKeepTheirMetricsAndCallNames) {
  for (const OpCase& c : op_cases()) {
    EXPECT_EQ(to_string(c.op), c.metrics_name);
    EXPECT_EQ(call_name(c.op), c.call_name);
    EXPECT_EQ(parse_op(c.metrics_name), c.op);
  }
}

}  // namespace
}  // namespace cmpi::comm
