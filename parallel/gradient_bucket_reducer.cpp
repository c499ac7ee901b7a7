// Counting: every bucket holds a countdown of the parameters overlapping it;
// param_ready() decrements the buckets of its parameter and launches, in
// launch order, every bucket at the front whose countdown reached zero.
// Launching submits the bucket's collective to an OrderedCommQueue, which
// runs it on its thread (or inline) in submission order and keeps the first
// error.
#include "parallel/gradient_bucket_reducer.h"

#include <stdexcept>
#include <utility>

namespace cmpi::parallel {

GradientBucketReducer::GradientBucketReducer(std::vector<std::vector<size_t>> params_of_bucket,
                                             size_t param_count, std::vector<size_t> launch_order,
                                             const std::vector<size_t>& late, RunBucket run,
                                             Options options)
    : buckets_of_param_(param_count),
      launch_order_(std::move(launch_order)),
      parameters_per_bucket_(params_of_bucket.size(), 0),
      reported_(param_count, 0),
      run_(std::move(run)),
      what_(std::move(options.what)),
      queue_(options.threaded, options.abandon_after) {
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
}

GradientBucketReducer::~GradientBucketReducer() {
  shutdown();
}

bool GradientBucketReducer::shutdown() {
  return queue_.shutdown();
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
    ++launched_early_;
  }
}

void GradientBucketReducer::launch_remaining() {
  while (next_ < launch_order_.size()) launch(launch_order_[next_++]);
}

void GradientBucketReducer::launch(size_t bucket) {
  ++buckets_run_;
  // Not threaded, the queue runs the bucket now and its error propagates
  // unchanged, as before overlap existed.
  queue_.submit([run = run_, bucket] { run(bucket); },
                "gradient bucket " + std::to_string(bucket) + " of " +
                    std::to_string(parameters_per_bucket_.size()) + " (" + what_ + ")");
}

void GradientBucketReducer::wait() {
  armed_ = false;
  next_ = 0;
  queue_.wait_all();
}

GradientBucketReducer::Times GradientBucketReducer::take_times() {
  const OrderedCommQueue::Times queue = queue_.take_times();
  Times t;
  t.busy_seconds = queue.busy_seconds;
  t.waited_seconds = queue.waited_seconds;
  t.buckets = buckets_run_;
  t.launched_early = launched_early_;
  buckets_run_ = launched_early_ = 0;
  return t;
}

}  // namespace cmpi::parallel
