// Counting: every bucket holds a countdown of the parameters overlapping it;
// param_ready() decrements the buckets of its parameter and launches, in
// launch order, every bucket at the front whose countdown reached zero.
// Launching submits the bucket's collective to an OrderedCommQueue, which
// runs it on its thread (or inline) in submission order and keeps the first
// error. Every backward, the same countdown runs per round over the buckets
// before the first late one; reaching the end of them starts the next round
// at once, without waiting for the collectives in flight.
#include "parallel/zero/gradient_bucket_reducer.h"

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
  every_backward_ = options.every_backward;
  std::vector<char> holds_late(buckets, 0);
  for (size_t p : late)
    for (size_t b : buckets_of_param_[p]) holds_late[b] = 1;
  streamed_ = 0;
  while (streamed_ < buckets && !holds_late[launch_order_[streamed_]]) ++streamed_;
  for (size_t k = streamed_; k < buckets; ++k)
    if (every_backward_ && !holds_late[launch_order_[k]])
      throw std::invalid_argument("gradient bucket reducer: bucket " +
                                  std::to_string(launch_order_[k]) +
                                  " holds no late parameter but launches after one that does");
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
  if (!armed() || param >= reported_.size() || reported_[param]) return;
  reported_[param] = 1;
  round_open_ = true;
  for (size_t b : buckets_of_param_[param]) --pending_[b];
  const size_t end = every_backward_ ? streamed_ : launch_order_.size();
  while (next_ < end && pending_[launch_order_[next_]] == 0) {
    launch(launch_order_[next_++]);
    ++launched_early_;
  }
  if (every_backward_ && next_ == streamed_) start_round();
}

void GradientBucketReducer::param_arriving(size_t param) {
  if (every_backward_ && param < reported_.size() && reported_[param] == 1) close_round();
}

void GradientBucketReducer::close_round() {
  while (next_ < streamed_) launch(launch_order_[next_++]);
  start_round();
}

void GradientBucketReducer::start_round() {
  pending_ = parameters_per_bucket_;
  for (auto& r : reported_) r = r == 2 ? 2 : 0;
  next_ = 0;
  round_open_ = false;
}

void GradientBucketReducer::launch_remaining() {
  if (every_backward_) {
    if (late_launched_) return;  // until wait(): the step's late buckets go once
    late_launched_ = true;
    if (round_open_) close_round();
    next_ = streamed_;
  }
  while (next_ < launch_order_.size()) launch(launch_order_[next_++]);
  if (every_backward_) start_round();
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
  // every_backward: a round in progress stays (it ends in launch_remaining()).
  if (!every_backward_) next_ = 0;
  late_launched_ = false;
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
