// BackgroundWriter, the thread of an asynchronous checkpoint save: the
// training loop polls finished()/failed() between steps while the task runs,
// then collects the outcome with wait(). These tests run in every build and,
// under scripts/test.sh --sanitize thread, are where ThreadSanitizer watches
// the handover of the outcome from the writer's thread to the loop's.
#include "checkpoint/background_writer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace cmpi::checkpoint {
namespace {

// Polls as the training loop does at step boundaries, until the task ended.
void poll_until_finished(const BackgroundWriter& writer) {
  while (!writer.finished()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

TEST(BackgroundWriter, TheOutcomeAndWhatTheTaskWroteReachTheCaller) {
  BackgroundWriter writer;
  std::vector<int> written;  // the task's output, read by the caller after wait()
  std::atomic<bool> release{false};
  writer.start([&] {
    while (!release.load()) std::this_thread::yield();
    for (int i = 0; i < 1000; ++i) written.push_back(i);
    return ShardDigest{4000, 0x1234abcdu};
  });
  EXPECT_TRUE(writer.in_flight());
  EXPECT_FALSE(writer.finished());  // held at `release`
  release.store(true);
  poll_until_finished(writer);
  EXPECT_FALSE(writer.failed());
  const BackgroundOutcome outcome = writer.wait();
  EXPECT_FALSE(writer.in_flight());
  EXPECT_EQ(outcome.error, "");
  EXPECT_EQ(outcome.digest.bytes, 4000u);
  EXPECT_EQ(outcome.digest.checksum, 0x1234abcdu);
  EXPECT_GE(outcome.seconds, 0.0);
  ASSERT_EQ(written.size(), 1000u);
  EXPECT_EQ(written.back(), 999);
}

TEST(BackgroundWriter, AFailedTaskIsReportedByFailedAndWait) {
  BackgroundWriter writer;
  writer.start([]() -> ShardDigest { throw std::runtime_error("disk full: shard_00001.bin"); });
  poll_until_finished(writer);
  EXPECT_TRUE(writer.failed());
  const BackgroundOutcome outcome = writer.wait();
  EXPECT_EQ(outcome.error, "disk full: shard_00001.bin");
}

// A task that throws something other than a std::exception must fail the
// save like any other error, not end the process (std::terminate).
TEST(BackgroundWriter, ATaskThrowingANonStandardExceptionFailsTheSave) {
  BackgroundWriter writer;
  writer.start([]() -> ShardDigest { throw 42; });
  poll_until_finished(writer);
  EXPECT_TRUE(writer.failed());
  const BackgroundOutcome outcome = writer.wait();
  EXPECT_NE(outcome.error, "");
}

TEST(BackgroundWriter, OneTaskAtATimeAndEachOutcomeIsItsOwn) {
  BackgroundWriter writer;
  EXPECT_THROW(writer.wait(), std::logic_error);  // nothing in flight
  for (uint64_t round = 1; round <= 20; ++round) {
    writer.start([round] {
      if (round % 3 == 0) throw std::runtime_error("round " + std::to_string(round));
      return ShardDigest{round, round * 7};
    });
    EXPECT_THROW(writer.start([] { return ShardDigest{}; }), std::logic_error);
    const BackgroundOutcome outcome = writer.wait();
    if (round % 3 == 0) {
      EXPECT_EQ(outcome.error, "round " + std::to_string(round));
    } else {
      EXPECT_EQ(outcome.error, "");
      EXPECT_EQ(outcome.digest.bytes, round);
      EXPECT_EQ(outcome.digest.checksum, round * 7);
    }
  }
}

TEST(BackgroundWriter, DestructionWaitsForTheTaskInFlight) {
  std::atomic<bool> done{false};
  {
    BackgroundWriter writer;
    writer.start([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      done.store(true);
      return ShardDigest{};
    });
  }
  EXPECT_TRUE(done.load());
}

}  // namespace
}  // namespace cmpi::checkpoint
