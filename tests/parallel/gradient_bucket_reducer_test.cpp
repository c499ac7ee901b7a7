// GradientBucketReducer without MPI: buckets run in launch order as their
// parameters become ready (a later bucket ready first still waits), late
// parameters hold their buckets until launch_remaining(), nothing launches
// while disarmed, a bucket's error reaches wait() naming the bucket and the
// collective (and stops the buckets after it), and destruction with a
// collective that never ends returns instead of hanging; every_backward
// launches each bucket once per backward.
#include "parallel/zero/gradient_bucket_reducer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace cmpi::parallel {
namespace {

using namespace std::chrono_literals;

// Four buckets over five parameters, like ZeroLayout cuts them: parameter 2
// spans buckets 1 and 2. Launch order is reverse bucket order.
const std::vector<std::vector<size_t>> kParamsOfBucket = {{0, 1}, {2}, {2, 3}, {4}};
const std::vector<size_t> kReverse = {3, 2, 1, 0};

struct Recorder {
  std::mutex mutex;
  std::vector<size_t> ran;
  GradientBucketReducer::RunBucket run() {
    return [this](size_t b) {
      std::lock_guard<std::mutex> lock(mutex);
      ran.push_back(b);
    };
  }
  std::vector<size_t> snapshot() {
    std::lock_guard<std::mutex> lock(mutex);
    return ran;
  }
};

GradientBucketReducer::Options threaded(std::chrono::milliseconds abandon_after = 5000ms) {
  GradientBucketReducer::Options o;
  o.threaded = true;
  o.what = "allreduce over dp";
  o.abandon_after = abandon_after;
  return o;
}

TEST(GradientBucketReducer, LaunchesInOrderAsParametersBecomeReady) {
  for (bool is_threaded : {true, false}) {
    Recorder recorder;
    auto options = threaded();
    options.threaded = is_threaded;
    GradientBucketReducer reducer(kParamsOfBucket, 5, kReverse, {}, recorder.run(), options);
    for (int step = 0; step < 2; ++step) {
      recorder.ran.clear();
      reducer.arm();
      reducer.param_ready(1);  // bucket 0 still needs parameter 0, and is launched last
      reducer.param_ready(3);  // bucket 2 still needs parameter 2
      reducer.param_ready(4);  // bucket 3: first in launch order, goes at once
      reducer.param_ready(4);  // a repeat changes nothing
      reducer.param_ready(0);  // bucket 0 ready, but waits for buckets 2 and 1
      reducer.param_ready(2);  // buckets 2 and 1 ready: 2, 1, then 0
      reducer.launch_remaining();
      reducer.wait();
      EXPECT_EQ(recorder.snapshot(), (std::vector<size_t>{3, 2, 1, 0}))
          << (is_threaded ? "threaded" : "inline") << " step " << step;
      const auto times = reducer.take_times();
      EXPECT_EQ(times.buckets, 4u);
      EXPECT_EQ(times.launched_early, 4u);
    }
  }
}

TEST(GradientBucketReducer, LateParametersAndUnreportedOnesWaitForLaunchRemaining) {
  Recorder recorder;
  GradientBucketReducer reducer(kParamsOfBucket, 5, kReverse, /*late=*/{3}, recorder.run(),
                                threaded());
  reducer.arm();
  for (size_t p : {4, 3, 2}) reducer.param_ready(p);  // parameter 3 is late: bucket 2 holds
  reducer.param_ready(0);                             // parameter 1 never reported (unused)
  std::this_thread::sleep_for(20ms);
  // Only bucket 3 could go: bucket 2 holds a late parameter and blocks 1 and 0.
  EXPECT_EQ(recorder.snapshot(), (std::vector<size_t>{3}));
  reducer.launch_remaining();
  reducer.wait();
  EXPECT_EQ(recorder.snapshot(), (std::vector<size_t>{3, 2, 1, 0}));
  EXPECT_EQ(reducer.take_times().launched_early, 1u);
}

// Every backward (shard-only ZeRO-2/3): each backward launches every bucket
// once, without arm(); a parameter unused in one backward leaves its round
// open until a parameter that already reported arrives again; the late
// parameter's bucket (last in launch order) goes once, in launch_remaining().
TEST(GradientBucketReducer, EveryBackwardLaunchesEachBucketOncePerRound) {
  // Bucket 0 holds the late parameters 0 and 1 and launches last.
  const std::vector<size_t> order = {3, 2, 1, 0};
  Recorder recorder;
  auto options = threaded();
  options.threaded = false;
  options.every_backward = true;
  GradientBucketReducer reducer(kParamsOfBucket, 5, order, /*late=*/{0, 1}, recorder.run(),
                                options);
  EXPECT_TRUE(reducer.armed());
  for (size_t p : {4, 3, 2}) reducer.param_ready(p);  // a whole backward
  EXPECT_EQ(recorder.snapshot(), (std::vector<size_t>{3, 2, 1}));
  for (size_t p : {4, 2}) {  // parameter 3 unused: bucket 2 holds the round
    reducer.param_arriving(p);
    reducer.param_ready(p);
  }
  EXPECT_EQ(recorder.snapshot(), (std::vector<size_t>{3, 2, 1, 3}));
  reducer.param_arriving(4);  // the next backward: the open round is closed first
  EXPECT_EQ(recorder.snapshot(), (std::vector<size_t>{3, 2, 1, 3, 2, 1}));
  reducer.param_ready(4);
  reducer.launch_remaining();  // the third round's rest, then the late bucket
  reducer.launch_remaining();  // once per step
  reducer.wait();
  EXPECT_EQ(recorder.snapshot(), (std::vector<size_t>{3, 2, 1, 3, 2, 1, 3, 2, 1, 0}));
  // A bucket without a late parameter may not launch after one with.
  EXPECT_THROW(
      GradientBucketReducer(kParamsOfBucket, 5, {0, 3, 2, 1}, {0}, recorder.run(), options),
      std::invalid_argument);
}

TEST(GradientBucketReducer, NothingLaunchesWhileDisarmed) {
  Recorder recorder;
  GradientBucketReducer reducer(kParamsOfBucket, 5, kReverse, {}, recorder.run(), threaded());
  for (size_t p = 0; p < 5; ++p) reducer.param_ready(p);  // a micro-batch before the last
  std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(recorder.snapshot().empty());
  reducer.launch_remaining();  // overlap off, or no begin_last_micro_batch: all in the step
  reducer.wait();
  EXPECT_EQ(recorder.snapshot(), (std::vector<size_t>{3, 2, 1, 0}));
  EXPECT_EQ(reducer.take_times().launched_early, 0u);
}

TEST(GradientBucketReducer, ABucketErrorReachesWaitNamingBucketAndCollective) {
  Recorder recorder;
  auto run = [&](size_t b) {
    if (b == 2) throw std::runtime_error("ring allreduce: decode failed at hop 1");
    recorder.run()(b);
  };
  GradientBucketReducer reducer(kParamsOfBucket, 5, kReverse, {}, run, threaded());
  reducer.arm();
  for (size_t p = 0; p < 5; ++p) reducer.param_ready(p);
  reducer.launch_remaining();
  try {
    reducer.wait();
    FAIL() << "the failed bucket was not reported";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(),
                 "gradient bucket 2 of 4 (allreduce over dp): ring allreduce: decode failed at "
                 "hop 1");
  }
  // Buckets after the failed one never ran: the group's order is broken.
  EXPECT_EQ(recorder.snapshot(), (std::vector<size_t>{3}));
  // Every later wait reports it again; nothing is lost silently.
  EXPECT_THROW(reducer.arm(), std::runtime_error);
  EXPECT_THROW(reducer.wait(), std::runtime_error);
}

TEST(GradientBucketReducer, DestructionWithACollectiveThatNeverEndsReturns) {
  // The shared flag outlives the reducer: the abandoned thread still reads it.
  auto release = std::make_shared<std::atomic<bool>>(false);
  auto started = std::make_shared<std::atomic<bool>>(false);
  const auto begin = std::chrono::steady_clock::now();
  {
    GradientBucketReducer reducer(
        kParamsOfBucket, 5, kReverse, {},
        [release, started](size_t) {
          started->store(true);
          while (!release->load()) std::this_thread::sleep_for(1ms);  // a peer that never joins
        },
        threaded(/*abandon_after=*/100ms));
    reducer.arm();
    for (size_t p = 0; p < 5; ++p) reducer.param_ready(p);
    while (!started->load()) std::this_thread::sleep_for(1ms);
    EXPECT_FALSE(reducer.shutdown()) << "a running collective must be reported as abandoned";
  }
  EXPECT_LT(std::chrono::steady_clock::now() - begin, 3s);
  release->store(true);  // let the detached thread end before the process does
  std::this_thread::sleep_for(20ms);
}

TEST(GradientBucketReducer, DestructionWithQueuedBucketsDropsThem) {
  std::atomic<int> ran{0};
  {
    GradientBucketReducer reducer(
        kParamsOfBucket, 5, kReverse, {},
        [&](size_t) {
          std::this_thread::sleep_for(20ms);
          ++ran;
        },
        threaded());
    reducer.arm();
    for (size_t p = 0; p < 5; ++p) reducer.param_ready(p);
  }  // joins after at most the running bucket
  EXPECT_LE(ran.load(), 2);
}

TEST(GradientBucketReducer, RejectsABadLaunchOrderOrParameter) {
  Recorder recorder;
  EXPECT_THROW(
      GradientBucketReducer(kParamsOfBucket, 5, {3, 2, 2, 0}, {}, recorder.run(), threaded()),
      std::invalid_argument);
  EXPECT_THROW(GradientBucketReducer(kParamsOfBucket, 4, kReverse, {}, recorder.run(), threaded()),
               std::invalid_argument);
  EXPECT_THROW(GradientBucketReducer(kParamsOfBucket, 5, kReverse, {7}, recorder.run(), threaded()),
               std::invalid_argument);
}

}  // namespace
}  // namespace cmpi::parallel
