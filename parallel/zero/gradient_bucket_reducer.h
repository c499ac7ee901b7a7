// GradientBucketReducer: launches the gradient buckets of a step as soon as
// every parameter gradient they hold is final, and runs their collectives on
// one communication thread while backward goes on (PyTorch DDP's Reducer,
// without its autograd side: the optimizer's hooks call param_ready()).
//
// Works as follows. A step has one "last" backward (the last micro-batch's,
// announced by arm()); a parameter's gradient is final once autograd has
// accumulated it in that backward. Every bucket counts the parameters that
// overlap it; param_ready() counts them down. Buckets are launched strictly
// in launch order (the optimizer gives reverse parameter order, the order
// backward produces gradients): bucket k+1 waits for bucket k even when it is
// ready first, because every rank of the group must issue the collectives in
// the same order and only launch order is the same everywhere. A bucket that
// is never counted down (an unused parameter, or one listed as `late`: its
// gradient is folded in after backward, e.g. the tied embedding over pp)
// holds back itself and everything after it until launch_remaining(), which
// step() calls after backward.
//
// Why a thread and not non-blocking MPI collectives: the compressed
// collectives (comm/algorithms/, e.g. the ring allreduce with a codec) are
// blocking multi-step algorithms that encode and decode between transfers;
// a thread runs them unchanged, while MPI_Iallreduce would only cover the
// plain path and nothing would progress them during backward anyway. The
// price: MPI must grant MPI_THREAD_MULTIPLE (the main thread keeps talking
// over tp/pp meanwhile), and the Communicator a bucket uses must be left to
// this thread while buckets are in flight: callers wait() before their own
// calls on it. The thread is an OrderedCommQueue's (one task per bucket, in
// launch order); it sleeps on a condition variable when it has no bucket, so
// it costs no CPU between collectives.
//
// Errors: the first exception a bucket throws is kept, naming the bucket and
// `what` (e.g. "allreduce over dp"); later buckets are dropped (the group's
// collective order is broken by then) and wait() rethrows it, every time.
// Destruction drops queued buckets and waits for the running one at most
// `abandon_after`; a collective still running then (a peer that will never
// join) is abandoned: the thread is detached, shutdown() says so, and the
// caller must keep the buffers it uses alive (the job is expected to end).
//
// Not threaded (overlap off): launch runs each bucket inline, in the same
// launch order, so both modes compute bit-identical results.
//
// Every backward (Options::every_backward; ZeRO-2/3 holding only a gradient
// shard): each micro-batch's backward is a round, and every bucket is
// launched once per round, not once per step. No arm(): a round starts with
// the first report after the last one ended, and ends once every bucket
// without a late parameter has launched. A parameter that reports nothing in
// a backward (unused) would keep its round open, so param_arriving(), called
// before a parameter's gradient is accumulated, closes a round the
// parameter already reported in (launching the rest of it, whose missing
// gradients count as zero) before the next backward adds to anything;
// launch_remaining() closes the last round. Buckets holding a late parameter
// must come last in launch order and launch once, in launch_remaining();
// every parameter overlapping one must be late itself (ZeroOptimizer makes
// it so), or its report would open a round no other bucket closes.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "parallel/zero/ordered_comm_queue.h"

namespace cmpi::parallel {

class GradientBucketReducer {
 public:
  using RunBucket = std::function<void(size_t bucket)>;

  struct Options {
    bool threaded = true;
    std::string what = "gradient reduction";  // names the collective in errors
    std::chrono::milliseconds abandon_after{5000};
    bool every_backward = false;  // a round per backward (see the file comment)
  };

  // Time spent by one step's reduction.
  struct Times {
    double busy_seconds = 0;    // running bucket collectives (thread or inline)
    double waited_seconds = 0;  // the caller blocked in wait() (exposed time)
    size_t buckets = 0;         // buckets run
    size_t launched_early = 0;  // of them, launched before launch_remaining()
  };

  // params_of_bucket[b]: the parameters (indices < param_count) that overlap
  // bucket b; launch_order: a permutation of the buckets; late: parameters
  // whose buckets are left for launch_remaining(). Throws
  // std::invalid_argument for an index out of range or a bad permutation
  // (every_backward: also for a late bucket before one without).
  GradientBucketReducer(std::vector<std::vector<size_t>> params_of_bucket, size_t param_count,
                        std::vector<size_t> launch_order, const std::vector<size_t>& late,
                        RunBucket run, Options options);
  ~GradientBucketReducer();
  GradientBucketReducer(const GradientBucketReducer&) = delete;
  GradientBucketReducer& operator=(const GradientBucketReducer&) = delete;

  // The next backward is the step's last: parameters reported ready from now
  // on are final. Waits for anything still in flight first; a no-op while
  // armed.
  void arm();
  bool armed() const { return armed_ || every_backward_; }
  // Parameter `param` holds its final gradient (only counted while armed;
  // a second report of the same parameter is ignored). every_backward: its
  // gradient of this backward is complete.
  void param_ready(size_t param);
  // every_backward: the next backward is about to add to `param`'s
  // gradient; closes the round if `param` already reported in it (a no-op
  // otherwise).
  void param_arriving(size_t param);
  // Launches every bucket not launched yet, in launch order (every_backward:
  // closes the round in progress, then launches the late buckets).
  void launch_remaining();
  // Blocks until every launched bucket is done; rethrows the first error of
  // any bucket (std::runtime_error naming bucket and collective). Ends the
  // step's reduction: disarms, and the next launch_remaining() starts over.
  void wait();
  // Times since the last take_times(), then resets them.
  Times take_times();
  // Stops the thread (see the file comment); false when a running
  // collective had to be abandoned. Idempotent; the destructor calls it.
  bool shutdown();

 private:
  void launch(size_t bucket);
  // every_backward: launches the round's buckets not launched yet and starts
  // a new round.
  void close_round();
  void start_round();

  std::vector<std::vector<size_t>> buckets_of_param_;
  std::vector<size_t> launch_order_;
  std::vector<size_t> parameters_per_bucket_;  // + 1 for buckets holding a late parameter
  std::vector<size_t> pending_;                // per bucket, this step
  std::vector<char> reported_;                 // per parameter, this step
  size_t next_ = 0;                            // position in launch_order_
  bool armed_ = false;
  bool every_backward_ = false;
  size_t streamed_ = 0;         // every_backward: launch positions before the first late bucket
  bool round_open_ = false;     // every_backward: something reported or launched this round
  bool late_launched_ = false;  // every_backward: launch_remaining() ran since the last wait()
  RunBucket run_;
  std::string what_;
  size_t buckets_run_ = 0, launched_early_ = 0;  // since the last take_times()
  OrderedCommQueue queue_;
};

}  // namespace cmpi::parallel
