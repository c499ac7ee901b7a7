// BackgroundWriter: runs the file work of an asynchronous checkpoint save
// (checkpoint.async) on a thread of its own while the training loop goes on:
// first every rank's shard (encoded from a snapshot the loop copied between
// two steps, so nothing it reads changes under it; written to a temporary
// file, fsynced, renamed), then, on rank 0, config.yaml, metadata.yaml and
// the pruning. A task issues no MPI call: agreeing that every rank's part is
// done and gathering the shards' checksums stay with the loop's thread
// (checkpoint_manager.h), so no communicator is used from two threads at
// once. One task at a time; the destructor waits for the one in flight.
// Torch-free.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "checkpoint/checkpoint_store.h"

namespace cmpi::checkpoint {

struct BackgroundOutcome {
  ShardDigest digest;  // what the task returned
  std::string error;   // what it threw; empty: it succeeded
  double seconds = 0;  // its time on the thread
};

class BackgroundWriter {
 public:
  BackgroundWriter() = default;
  ~BackgroundWriter();
  BackgroundWriter(const BackgroundWriter&) = delete;
  BackgroundWriter& operator=(const BackgroundWriter&) = delete;

  // Runs `task` on the thread; throws std::logic_error while a task is in
  // flight (wait() for it first).
  void start(std::function<ShardDigest()> task);
  // A task was started and not yet collected by wait().
  bool in_flight() const { return thread_.joinable(); }
  // The task in flight has ended (succeeded or failed): wait() will not block.
  bool finished() const { return finished_.load(std::memory_order_acquire); }
  // The task in flight has ended and failed.
  bool failed() const { return finished() && failed_.load(std::memory_order_relaxed); }
  // Blocks until the task in flight ends and returns its outcome.
  BackgroundOutcome wait();

 private:
  std::thread thread_;
  std::atomic<bool> finished_{false};
  std::atomic<bool> failed_{false};
  BackgroundOutcome outcome_;  // written by the thread before finished_
};

}  // namespace cmpi::checkpoint
