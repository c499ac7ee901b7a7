// OrderedCommQueue: runs communication tasks one at a time, in submission
// order, on one thread (or inline), so that a rank can start collectives
// ahead of need (per-layer ZeRO-3's parameter prefetch) and mix them with
// others on the same communicator (its gradient reduce-scatters).
//
// Why one queue for both: MPI requires every rank of a communicator to issue
// its collectives in the same order. Main-thread program order is the same on
// every rank (forward, and backward's node order, are deterministic), so
// tasks submitted from it and run strictly in that order on one thread keep
// the order; two threads on one communicator would not. The caller must
// leave the communicators its tasks use to this queue while tasks are
// pending (wait_all() first), and MPI must grant MPI_THREAD_MULTIPLE when
// threaded (the main thread keeps talking over tp/pp meanwhile); see
// gradient_bucket_reducer.h for why a thread and not non-blocking MPI.
//
// Errors: the first exception a task throws is kept, naming the task; later
// tasks are dropped (the collective order is broken) and every wait rethrows
// it as std::runtime_error. Destruction drops queued tasks and waits for the
// running one at most `abandon_after`; one still running then (a peer that
// will never join) is abandoned: the thread is detached, shutdown() says so,
// and the caller must keep its buffers alive (the job is expected to end).
//
// Not threaded: submit() runs the task at once, so both modes issue the same
// collectives in the same order and compute bit-identical results.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace cmpi::parallel {

class OrderedCommQueue {
 public:
  using Task = std::function<void()>;
  using Ticket = uint64_t;  // 1, 2, ... in submission order

  explicit OrderedCommQueue(bool threaded,
                            std::chrono::milliseconds abandon_after = std::chrono::seconds(5));
  ~OrderedCommQueue();
  OrderedCommQueue(const OrderedCommQueue&) = delete;
  OrderedCommQueue& operator=(const OrderedCommQueue&) = delete;

  // Queues `task` (runs it now when not threaded; its exception then
  // propagates as is). `what` names it in errors.
  Ticket submit(Task task, std::string what);
  // Blocks until task `ticket` and every task before it are done; rethrows
  // the first error of any task.
  void wait(Ticket ticket);
  void wait_all();
  bool threaded() const { return threaded_; }
  // Seconds spent running tasks and blocked in wait()/wait_all() since the
  // last call, then reset.
  struct Times {
    double busy_seconds = 0;
    double waited_seconds = 0;
  };
  Times take_times();
  // Stops the thread (see the file comment); false when a running task had
  // to be abandoned. Idempotent; the destructor calls it.
  bool shutdown();

 private:
  struct State;  // shared with the thread, so an abandoned one outlives us
  bool threaded_;
  std::chrono::milliseconds abandon_after_;
  Ticket submitted_ = 0;
  std::shared_ptr<State> state_;
};

}  // namespace cmpi::parallel
