// A deque of (ticket, task) under one mutex; the thread pops the front, runs
// it unlocked and publishes `done_through` = its ticket. Tickets increase by
// one per submit, so "ticket t done" is done_through >= t.
#include "parallel/zero/ordered_comm_queue.h"

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>

#include "comm/clock.h"

namespace cmpi::parallel {
namespace {

struct Entry {
  OrderedCommQueue::Ticket ticket;
  OrderedCommQueue::Task task;
  std::string what;
};

}  // namespace

struct OrderedCommQueue::State {
  std::mutex mutex;
  std::condition_variable work;  // the thread waits here for tasks or stop
  std::condition_variable done;  // callers wait here for tickets
  std::deque<Entry> queue;
  Ticket done_through = 0;
  bool running = false;
  bool stop = false;
  bool failed = false;
  std::string error;
  Times times;
  std::thread thread;

  static void loop(const std::shared_ptr<State>& s) {
    std::unique_lock<std::mutex> lock(s->mutex);
    for (;;) {
      s->work.wait(lock, [&] { return s->stop || !s->queue.empty(); });
      if (s->queue.empty()) return;  // stopped
      Entry entry = std::move(s->queue.front());
      s->queue.pop_front();
      s->running = true;
      lock.unlock();
      const auto start = comm::Clock::now();
      std::string error;
      try {
        entry.task();
      } catch (const std::exception& e) {
        error = e.what();
      } catch (...) {
        error = "unknown exception";
      }
      const double seconds = comm::seconds_since(start);
      lock.lock();
      s->running = false;
      s->times.busy_seconds += seconds;
      if (!error.empty() && !s->failed) {
        s->failed = true;
        s->error = entry.what + ": " + error;
        // The collective order is broken: run nothing more, release waiters.
        if (!s->queue.empty()) entry.ticket = s->queue.back().ticket;
        s->queue.clear();
      }
      s->done_through = entry.ticket;
      s->done.notify_all();
    }
  }
};

OrderedCommQueue::OrderedCommQueue(bool threaded, std::chrono::milliseconds abandon_after)
    : threaded_(threaded), abandon_after_(abandon_after), state_(std::make_shared<State>()) {
  if (threaded_) {
    auto state = state_;
    state_->thread = std::thread([state] { State::loop(state); });
  }
}

OrderedCommQueue::~OrderedCommQueue() {
  shutdown();
}

bool OrderedCommQueue::shutdown() {
  State& s = *state_;
  if (!s.thread.joinable()) return true;
  std::unique_lock<std::mutex> lock(s.mutex);
  s.queue.clear();
  s.stop = true;
  s.work.notify_all();
  const bool idle = s.done.wait_for(lock, abandon_after_, [&] { return !s.running; });
  lock.unlock();
  if (idle) {
    s.thread.join();
    return true;
  }
  s.thread.detach();  // a task that will not finish (a peer is gone): joining would hang
  return false;
}

OrderedCommQueue::Ticket OrderedCommQueue::submit(Task task, std::string what) {
  const Ticket ticket = ++submitted_;
  State& s = *state_;
  if (!threaded_) {
    const auto start = comm::Clock::now();
    task();
    const double seconds = comm::seconds_since(start);
    s.times.busy_seconds += seconds;
    s.times.waited_seconds += seconds;  // all of it is exposed
    s.done_through = ticket;
    return ticket;
  }
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.failed || s.stop) {
    s.done_through = ticket;  // dropped: wait() reports the failure
    return ticket;
  }
  s.queue.push_back({ticket, std::move(task), std::move(what)});
  s.work.notify_one();
  return ticket;
}

void OrderedCommQueue::wait(Ticket ticket) {
  if (!threaded_) return;
  State& s = *state_;
  const auto start = comm::Clock::now();
  std::unique_lock<std::mutex> lock(s.mutex);
  s.done.wait(lock, [&] { return s.done_through >= ticket || s.failed; });
  s.times.waited_seconds += comm::seconds_since(start);
  if (s.failed) throw std::runtime_error(s.error);
}

void OrderedCommQueue::wait_all() {
  wait(submitted_);
}

OrderedCommQueue::Times OrderedCommQueue::take_times() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  Times t = state_->times;
  state_->times = Times{};
  return t;
}

}  // namespace cmpi::parallel
