// OrderedCommQueue (torch-free, one process): tasks run one at a time in
// submission order, threaded or inline; wait(ticket) returns once that task
// is done; the first error names its task, drops what follows and reaches
// every later wait; destruction with a task that never ends abandons it.
#include "parallel/zero/ordered_comm_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace cmpi::parallel {
namespace {

TEST(OrderedCommQueue, RunsTasksInSubmissionOrderThreadedOrInline) {
  for (bool threaded : {true, false}) {
    OrderedCommQueue queue(threaded);
    std::mutex mutex;
    std::vector<int> order;
    std::vector<OrderedCommQueue::Ticket> tickets;
    for (int i = 0; i < 20; ++i)
      tickets.push_back(queue.submit(
          [&, i] {
            // Early tasks take longest: only strict ordering keeps the order.
            std::this_thread::sleep_for(std::chrono::microseconds(200 * (20 - i)));
            std::lock_guard<std::mutex> lock(mutex);
            order.push_back(i);
          },
          "task " + std::to_string(i)));
    queue.wait(tickets[4]);
    {
      std::lock_guard<std::mutex> lock(mutex);
      ASSERT_GE(order.size(), 5u) << "wait(ticket 5) returned before task 5 ran";
    }
    queue.wait_all();
    ASSERT_EQ(order.size(), 20u);
    for (int i = 0; i < 20; ++i) EXPECT_EQ(order[size_t(i)], i) << "threaded " << threaded;
    for (size_t i = 1; i < tickets.size(); ++i) EXPECT_EQ(tickets[i], tickets[i - 1] + 1);
  }
}

TEST(OrderedCommQueue, FirstErrorNamesItsTaskAndDropsTheRest) {
  OrderedCommQueue queue(true);
  std::atomic<int> ran{0};
  queue.submit([&] { ++ran; }, "first");
  queue.submit([] { throw std::runtime_error("peer 3 is gone"); }, "gather of unit 7");
  const auto last = queue.submit([&] { ++ran; }, "after");
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      queue.wait(last);
      FAIL() << "no error reported";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("gather of unit 7"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("peer 3 is gone"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(ran.load(), 1) << "the task after the failure must not run";
  EXPECT_THROW(queue.wait_all(), std::runtime_error);
}

TEST(OrderedCommQueue, InlineErrorsPropagateUnchanged) {
  OrderedCommQueue queue(false);
  EXPECT_THROW(queue.submit([] { throw std::invalid_argument("bad bucket"); }, "task"),
               std::invalid_argument);
}

TEST(OrderedCommQueue, ShutdownAbandonsATaskThatNeverEnds) {
  auto release = std::make_shared<std::atomic<bool>>(false);
  OrderedCommQueue queue(true, std::chrono::milliseconds(50));
  std::atomic<bool> started{false};
  queue.submit(
      [release, &started] {
        started = true;
        while (!*release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      },
      "stuck collective");
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_FALSE(queue.shutdown()) << "a running task that does not end must be abandoned";
  *release = true;  // lets the detached thread finish before the process ends
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

}  // namespace
}  // namespace cmpi::parallel
