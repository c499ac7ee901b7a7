#include "checkpoint/background_writer.h"

#include <chrono>
#include <exception>
#include <stdexcept>
#include <utility>

namespace cmpi::checkpoint {

BackgroundWriter::~BackgroundWriter() {
  if (thread_.joinable()) thread_.join();
}

void BackgroundWriter::start(std::function<ShardDigest()> task) {
  if (thread_.joinable()) throw std::logic_error("background writer: a task is already in flight");
  finished_.store(false, std::memory_order_relaxed);
  failed_.store(false, std::memory_order_relaxed);
  outcome_ = {};
  thread_ = std::thread([this, task = std::move(task)] {
    const auto start = std::chrono::steady_clock::now();
    BackgroundOutcome outcome;
    try {
      outcome.digest = task();
    } catch (const std::exception& e) {
      outcome.error = e.what();
      if (outcome.error.empty()) outcome.error = "unknown error writing a checkpoint";
    } catch (...) {
      // Anything else thrown would end the process (std::terminate) on
      // this thread: it fails the save like any other error instead.
      outcome.error = "unknown error writing a checkpoint";
    }
    outcome.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    failed_.store(!outcome.error.empty(), std::memory_order_relaxed);
    outcome_ = std::move(outcome);
    finished_.store(true, std::memory_order_release);
  });
}

BackgroundOutcome BackgroundWriter::wait() {
  if (!thread_.joinable()) throw std::logic_error("background writer: no task in flight");
  thread_.join();
  return std::move(outcome_);
}

}  // namespace cmpi::checkpoint
