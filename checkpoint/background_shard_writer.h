// BackgroundShardWriter: writes one rank's shard of an asynchronous save
// (checkpoint.async) on a thread of its own while the training loop goes on.
// It is handed a snapshot (the shard entries and rank state, copied by the
// loop between two steps), so nothing it reads changes under it. It encodes,
// writes the temporary file, fsyncs and renames it (write_shard), and records
// the size and checksum or the error. It issues no MPI call: agreeing that
// every rank's shard is durable and publishing metadata.yaml stay with the
// loop's thread (checkpoint_manager.h), so the communicators are never used
// from two threads at once. One save at a time; the destructor waits for the
// write in flight. Torch-free.
#pragma once

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint/checkpoint_store.h"
#include "checkpoint/shard_file.h"

namespace cmpi::checkpoint {

struct ShardSnapshot {
  std::string dir;  // the checkpoint directory (prepare_checkpoint_dir)
  int rank = 0;
  std::vector<ShardEntry> entries;
  RankState state;
};

struct ShardWriteOutcome {
  ShardDigest digest;
  std::string error;  // empty: the shard is durable
  double seconds = 0;  // encoding, writing and fsync on the writer thread
};

class BackgroundShardWriter {
 public:
  BackgroundShardWriter() = default;
  ~BackgroundShardWriter();
  BackgroundShardWriter(const BackgroundShardWriter&) = delete;
  BackgroundShardWriter& operator=(const BackgroundShardWriter&) = delete;

  // Starts writing `snapshot`; throws std::logic_error while a write is in
  // flight (wait() for it first).
  void start(ShardSnapshot snapshot);
  // A write was started and not yet collected by wait().
  bool in_flight() const { return thread_.joinable(); }
  // The write in flight has ended (durable or failed); wait() will not block.
  bool finished() const { return finished_.load(std::memory_order_acquire); }
  // The write in flight has ended and failed.
  bool failed() const { return finished() && failed_.load(std::memory_order_relaxed); }
  // Blocks until the write in flight ends and returns its outcome.
  ShardWriteOutcome wait();

 private:
  std::thread thread_;
  std::atomic<bool> finished_{false};
  std::atomic<bool> failed_{false};
  ShardWriteOutcome outcome_;  // written by the thread before finished_
};

}  // namespace cmpi::checkpoint
