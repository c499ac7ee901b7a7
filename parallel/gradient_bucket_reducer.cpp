#include "parallel/gradient_bucket_reducer.h"

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace cmpi::parallel {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

// Everything the communication thread touches, under `mutex` (except `run`,
// which is set once before the thread starts).
struct GradientBucketReducer::State {
  std::mutex mutex;
  std::condition_variable work;  // the thread waits here for buckets or stop
  std::condition_variable done;  // callers wait here for the queue to drain
  std::deque<size_t> queue;
  bool running = false;
  bool stop = false;
  bool failed = false;
  std::string error;
  Times times;
  RunBucket run;
  std::string what;
  size_t bucket_count = 0;
  std::thread thread;

  static void loop(const std::shared_ptr<State>& s) {
    std::unique_lock<std::mutex> lock(s->mutex);
    for (;;) {
      s->work.wait(lock, [&] { return s->stop || !s->queue.empty(); });
      if (s->queue.empty()) return;  // stopped
      const size_t bucket = s->queue.front();
      s->queue.pop_front();
      s->running = true;
      lock.unlock();
      const auto start = Clock::now();
      std::string error;
      try {
        s->run(bucket);
      } catch (const std::exception& e) {
        error = e.what();
      } catch (...) {
        error = "unknown exception";
      }
      const double seconds = seconds_since(start);
      lock.lock();
      s->running = false;
      s->times.busy_seconds += seconds;
      ++s->times.buckets;
      if (!error.empty() && !s->failed) {
        s->failed = true;
        s->error = "gradient bucket " + std::to_string(bucket) + " of " +
                   std::to_string(s->bucket_count) + " (" + s->what + "): " + error;
        s->queue.clear();  // the group's collective order is broken: run nothing more
      }
      s->done.notify_all();
    }
  }
};

GradientBucketReducer::GradientBucketReducer(std::vector<std::vector<size_t>> params_of_bucket,
                                             size_t param_count, std::vector<size_t> launch_order,
                                             const std::vector<size_t>& late, RunBucket run,
                                             Options options)
    : buckets_of_param_(param_count),
      launch_order_(std::move(launch_order)),
      parameters_per_bucket_(params_of_bucket.size(), 0),
      reported_(param_count, 0),
      threaded_(options.threaded),
      abandon_after_(options.abandon_after),
      state_(std::make_shared<State>()) {
  const size_t buckets = params_of_bucket.size();
  if (launch_order_.size() != buckets)
    throw std::invalid_argument("gradient bucket reducer: launch order has " +
                                std::to_string(launch_order_.size()) + " buckets, expected " +
                                std::to_string(buckets));
  std::vector<char> seen(buckets, 0);
  for (size_t b : launch_order_) {
    if (b >= buckets || seen[b])
      throw std::invalid_argument("gradient bucket reducer: launch order is not a permutation of " +
                                  std::to_string(buckets) + " buckets (bucket " +
                                  std::to_string(b) + ")");
    seen[b] = 1;
  }
  for (size_t b = 0; b < buckets; ++b) {
    for (size_t p : params_of_bucket[b]) {
      if (p >= param_count)
        throw std::invalid_argument("gradient bucket reducer: bucket " + std::to_string(b) +
                                    " names parameter " + std::to_string(p) + " of " +
                                    std::to_string(param_count));
      buckets_of_param_[p].push_back(b);
    }
    parameters_per_bucket_[b] = params_of_bucket[b].size();
  }
  // A late parameter is never reported: its buckets stay pending until
  // launch_remaining().
  for (size_t p : late) {
    if (p >= param_count)
      throw std::invalid_argument("gradient bucket reducer: late parameter " + std::to_string(p) +
                                  " of " + std::to_string(param_count));
    reported_[p] = 2;
  }
  pending_ = parameters_per_bucket_;
  state_->run = std::move(run);
  state_->what = std::move(options.what);
  state_->bucket_count = buckets;
  if (threaded_) {
    auto state = state_;
    state_->thread = std::thread([state] { State::loop(state); });
  }
}

GradientBucketReducer::~GradientBucketReducer() {
  shutdown();
}

bool GradientBucketReducer::shutdown() {
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
  // A collective that will not finish (a peer is gone): joining would hang.
  s.thread.detach();
  return false;
}

void GradientBucketReducer::arm() {
  if (armed_) return;  // once per step: re-arming would launch buckets twice
  wait();
  pending_ = parameters_per_bucket_;
  for (auto& r : reported_) r = r == 2 ? 2 : 0;
  next_ = 0;
  armed_ = true;
}

void GradientBucketReducer::param_ready(size_t param) {
  if (!armed_ || param >= reported_.size() || reported_[param]) return;
  reported_[param] = 1;
  for (size_t b : buckets_of_param_[param]) --pending_[b];
  while (next_ < launch_order_.size() && pending_[launch_order_[next_]] == 0) {
    launch(launch_order_[next_++]);
    std::lock_guard<std::mutex> lock(state_->mutex);
    ++state_->times.launched_early;
  }
}

void GradientBucketReducer::launch_remaining() {
  while (next_ < launch_order_.size()) launch(launch_order_[next_++]);
}

void GradientBucketReducer::launch(size_t bucket) {
  State& s = *state_;
  if (!threaded_) {
    const auto start = Clock::now();
    s.run(bucket);  // errors propagate unchanged, as before overlap existed
    const double seconds = seconds_since(start);
    s.times.busy_seconds += seconds;
    s.times.waited_seconds += seconds;  // all of it is exposed
    ++s.times.buckets;
    return;
  }
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.failed || s.stop) return;  // wait() reports the failure
  s.queue.push_back(bucket);
  s.work.notify_one();
}

void GradientBucketReducer::wait() {
  armed_ = false;
  next_ = 0;
  if (!threaded_) return;
  State& s = *state_;
  const auto start = Clock::now();
  std::unique_lock<std::mutex> lock(s.mutex);
  s.done.wait(lock, [&] { return s.queue.empty() && !s.running; });
  s.times.waited_seconds += seconds_since(start);
  if (s.failed) throw std::runtime_error(s.error);
}

GradientBucketReducer::Times GradientBucketReducer::take_times() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  Times t = state_->times;
  state_->times = Times{};
  return t;
}

}  // namespace cmpi::parallel
