// The watchdog's single-process pieces: the test-fault setting
// (comm/test_faults.h) and the node-view check of the start-up agreement
// (comm/node_grouping.h, view_agrees).
#include <gtest/gtest.h>

#include <stdexcept>

#include "comm/node_grouping.h"
#include "comm/test_faults.h"

namespace cmpi::comm {
namespace {

TEST(TestFaults, ParsesEachFaultAndRejectsTypos) {
  EXPECT_EQ(TestFaults::parse("").spin_rank, -1);
  const TestFaults spin = TestFaults::parse("spin:2:15");
  EXPECT_EQ(spin.spin_rank, 2);
  EXPECT_EQ(spin.spin_at_call, 15u);
  EXPECT_EQ(TestFaults::parse("lone_node:3").lone_node_rank, 3);
  EXPECT_EQ(TestFaults::parse("block_sparse:sparse").block_sparse, ForcedBlockSparse::kSparse);
  EXPECT_EQ(TestFaults::parse("block_sparse:dense").block_sparse, ForcedBlockSparse::kDense);
  EXPECT_EQ(TestFaults::parse("").block_sparse, ForcedBlockSparse::kNone);
  EXPECT_EQ(TestFaults::parse("auto_timing:100").auto_timing_mbit, 100u);
  EXPECT_EQ(TestFaults::parse("").auto_timing_mbit, 0u);
  const TestFaults stop = TestFaults::parse("stop:1:tp:200");
  EXPECT_EQ(stop.stop_rank, 1);
  EXPECT_EQ(stop.stop_group, "tp");
  EXPECT_EQ(stop.stop_at_call, 200u);
  EXPECT_EQ(TestFaults::parse("").stop_rank, -1);
  const TestFaults slowing = TestFaults::parse("slowing:1:3:250");
  EXPECT_EQ(slowing.step_delay_ms(1, 2), 0u);
  EXPECT_EQ(slowing.step_delay_ms(1, 3), 250u);
  EXPECT_EQ(slowing.step_delay_ms(1, 5), 750u);
  EXPECT_EQ(slowing.step_delay_ms(0, 5), 0u);
  const TestFaults slow_save = TestFaults::parse("slow_save:2:4000");
  EXPECT_EQ(slow_save.save_delay_ms(2), 4000u);
  EXPECT_EQ(slow_save.save_delay_ms(1), 0u);
  EXPECT_EQ(TestFaults::parse("").save_delay_ms(0), 0u);
  for (const char* bad : {"spin:2", "spin:x:3", "spin:2:0", "lone_node", "stall:1", "spin:-1:3",
                          "block_sparse", "block_sparse:fast", "slowing:1:3", "slow_save:1",
                          "slow_save:1:x", "stop:1:tp", "stop:1::5", "stop:1:tp:0", "auto_timing",
                          "auto_timing:0", "auto_timing:fast", "auto_timing:10:2"})
    EXPECT_THROW(TestFaults::parse(bad), std::invalid_argument) << bad;
}

// keys: (lowest world rank, view size) per rank of the communicator.
TEST(NodeViews, AgreeOnlyWhenTheyPartitionTheRanks) {
  // Two nodes {0,1} and {2,3}: every view agrees.
  const std::vector<int> two_nodes = {0, 2, 0, 2, 2, 2, 2, 2};
  EXPECT_TRUE(view_agrees(NodeView{{0, 1}, 0}, two_nodes));
  EXPECT_TRUE(view_agrees(NodeView{{2, 3}, 2}, two_nodes));
  // Rank 2 sees {2,3} but rank 3 sees itself alone: rank 2's check fails.
  // Rank 3's own view is consistent as far as it can tell, which is why
  // the ranks agree on the verdict (an allreduce) rather than each judging.
  const std::vector<int> lone = {0, 2, 0, 2, 2, 2, 3, 1};
  EXPECT_FALSE(view_agrees(NodeView{{2, 3}, 2}, lone));
  EXPECT_TRUE(view_agrees(NodeView{{3}, 3}, lone));
  // The ranks that were not involved agree among themselves.
  EXPECT_TRUE(view_agrees(NodeView{{0, 1}, 0}, lone));
  // Same key, but a third rank claims it too: more holders than members.
  const std::vector<int> crowded = {0, 2, 0, 2, 0, 2};
  EXPECT_FALSE(view_agrees(NodeView{{0, 1}, 0}, crowded));
}

}  // namespace
}  // namespace cmpi::comm
