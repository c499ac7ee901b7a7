#include "checkpoint/background_shard_writer.h"

#include <chrono>
#include <exception>
#include <stdexcept>
#include <utility>

namespace cmpi::checkpoint {

BackgroundShardWriter::~BackgroundShardWriter() {
  if (thread_.joinable()) thread_.join();
}

void BackgroundShardWriter::start(ShardSnapshot snapshot) {
  if (thread_.joinable())
    throw std::logic_error("background shard writer: a write is already in flight");
  finished_.store(false, std::memory_order_relaxed);
  failed_.store(false, std::memory_order_relaxed);
  outcome_ = {};
  thread_ = std::thread([this, snapshot = std::move(snapshot)]() mutable {
    const auto start = std::chrono::steady_clock::now();
    ShardWriteOutcome outcome;
    try {
      outcome.digest = write_shard(snapshot.dir, snapshot.rank, snapshot.entries, snapshot.state);
    } catch (const std::exception& e) {
      outcome.error = e.what();
      if (outcome.error.empty()) outcome.error = "unknown error writing a checkpoint shard";
    }
    // The snapshot's memory goes back before the loop learns the write ended.
    snapshot = {};
    outcome.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    failed_.store(!outcome.error.empty(), std::memory_order_relaxed);
    outcome_ = std::move(outcome);
    finished_.store(true, std::memory_order_release);
  });
}

ShardWriteOutcome BackgroundShardWriter::wait() {
  if (!thread_.joinable()) throw std::logic_error("background shard writer: no write in flight");
  thread_.join();
  return std::move(outcome_);
}

}  // namespace cmpi::checkpoint
