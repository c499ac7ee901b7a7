// Watchdog: every blocking communication call of this process runs under a
// deadline (run.timeout), so that a stopped or stuck rank ends the job with
// a message instead of leaving the others waiting inside MPI forever.
//
// How it works:
//   1. A thread entering a communication call arms a slot (WatchedCall):
//      the time it entered and what it waits in (operation, communicator,
//      peer), a handful of atomic stores and a steady-clock read, no system
//      call. Leaving the call disarms the slot. Calls nested in an armed
//      call (the MPI calls a compressed algorithm polls with) leave the
//      outer call's arming alone, so the deadline covers the whole
//      operation, and a thread that polls forever still expires.
//   2. The Communicator arms around each of its operations; every other
//      blocking MPI call of the process (the trainer's own collectives, the
//      start-up agreement, MPI_Finalize) is armed by comm/watched_mpi.cpp,
//      which defines those MPI functions and forwards them to PMPI.
//   3. The watchdog's thread wakes every kTick. A slot armed for longer than
//      the timeout ends the job (MPI_Abort) with one line naming this rank,
//      the group, the operation, the step and the peers waited for.
//   4. One line per job, not one per waiting rank: before it aborts, a rank
//      announces its failure to every rank over a communicator of the
//      watchdog's own (a duplicate of MPI_COMM_WORLD) and listens for
//      kAnnounceGrace. A rank whose deadline passes after it heard of
//      another's failure, or together with a lower rank's timeout, aborts
//      without a line; an error (abort_job) is always printed. A rank that
//      hears an announcement also knows that mpirun is about to terminate
//      it, and dies quietly (expect_termination) instead of adding a
//      "stopped by SIGTERM" line.
//   5. Which rank never arrived: a rank that hears of a timeout answers the
//      announcing rank with where it is (the operation and group of its
//      oldest call in flight, or that it is in none). The announcing rank
//      waits up to kAnswerWait for every answer, and its line names the ranks
//      that did not answer (stopped or dead), those outside any
//      communication call (stuck in their own code) and where the others
//      wait, so that a rank waiting on the culprit is not blamed for it.
// Only the thread talks on that communicator, and only while MPI grants
// MPI_THREAD_MULTIPLE; with less, deadlines still hold but no rank hears
// of another's failure.
//
// The timeout counts time spent waiting inside one call, not time between
// calls: a long first step or a checkpoint save on this rank does not trip
// it, but the other ranks waiting for that rank in a collective do. Hence
// the default, run.timeout: auto (comm/auto_deadline.h): a multiple of the
// slowest wait of the recent steps with a floor, and a long allowance of
// 30 minutes at start-up, around checkpoint saves and evaluations (which the
// training loop announces, expect_long_work) and after training; a number
// is a fixed deadline instead.
#pragma once

#include <mpi.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/auto_deadline.h"
#include "comm/test_faults.h"

namespace cmpi::comm {

class Watchdog {
 public:
  // How often the thread checks the deadlines and listens for announcements.
  static constexpr std::chrono::milliseconds kTick{100};
  // How long an aborting rank waits after announcing its failure, so that
  // the other ranks' threads hear of it before mpirun terminates them.
  static constexpr std::chrono::milliseconds kAnnounceGrace{3 * kTick};
  // How long a rank whose failure another rank reports waits for that rank
  // to abort the job before it aborts it itself.
  static constexpr std::chrono::milliseconds kQuietAbortDelay{20 * kTick};
  // How long a rank whose deadline passed waits for the others' answers
  // (their threads answer on their next tick).
  static constexpr std::chrono::milliseconds kAnswerWait{10 * kTick};
  static constexpr int kExitCode = 1;

  // Collective over MPI_COMM_WORLD (duplicates it for the announcements).
  // `program` starts every line it prints. Becomes the process's watchdog
  // (installed_watchdog()) until destroyed; one at a time.
  Watchdog(std::string program, int world_rank, int world_size, const TestFaults& faults);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // A fixed deadline: seconds one call may wait; 0 turns the deadline off
  // (announcements are still heard). Any thread, any time.
  void set_timeout(double seconds);
  // run.timeout: auto (the default): the deadline of AutoDeadline, with a
  // floor of `floor_seconds`. Any thread, any time.
  void use_auto_timeout(double floor_seconds);
  // The training step now running (named on expiry); -1: not known. Under
  // auto, every call starts a step of the deadline's window: call it from
  // the training loop's thread, once per step.
  void note_step(int64_t step);
  // Long work begins on every rank (a checkpoint save, an evaluation): under
  // auto, this step and the next wait up to the long allowance.
  void expect_long_work() { auto_deadline_.expect_long_work(); }
  // Training is over (the final save, the summary, MPI_Finalize follow).
  void training_ended() { auto_deadline_.training_ended(); }

  // Prints "<program>: rank R/N: error: <message>", announces the failure to
  // the other ranks and aborts the job with `exit_code`. Any thread.
  [[noreturn]] void abort_job(const std::string& message, int exit_code);

  // Stops listening for announcements and frees the communicator; call
  // before MPI_Finalize (deadlines still hold, MPI_Finalize included).
  void close_channel();

 private:
  friend class WatchedCall;
  static constexpr int kSlots = 32;
  static constexpr int kFailingTag = 1;
  static constexpr int kAnswerTag = 2;
  static constexpr int kAnswerBytes = 64;  // "allreduce on dp", NUL-terminated
  // What an announcement says (its first int; the second is the exit code).
  enum Failure : int { kError = 0, kTimeout = 1 };

  // One thread's call in flight. `owner` and `depth` belong to that thread;
  // the watchdog thread reads the rest, `entered_ns` last written.
  struct Slot {
    std::atomic<std::thread::id> owner{};
    int depth = 0;
    std::atomic<int64_t> entered_ns{0};  // 0: not in a call
    std::atomic<const char*> op{nullptr};
    std::atomic<MPI_Comm> comm{MPI_COMM_NULL};
    std::atomic<int> peer{-1};
  };
  // What a slot held when its deadline passed.
  struct Expired {
    const char* op;
    MPI_Comm comm;
    int peer;
    double waited_seconds;
  };

  Slot* enter(const char* op, MPI_Comm comm, int peer);
  void leave(Slot* slot);
  void run();
  bool find_expired(Expired& out) const;
  // Takes in the announcements and answers heard so far, answering each
  // timeout; callers hold mutex_.
  void listen_for_announcements();
  void answer(int rank);
  void take_answers();
  // "allreduce on dp" for this rank's oldest call in flight; "" for none.
  std::string where_now() const;
  // What the answers say: "; world rank 2 did not answer (stopped or
  // dead); world ranks 1, 3 wait in allreduce on dp"; "" without a channel.
  std::string answers_text() const;
  void announce(Failure failure, int exit_code);
  // Announces, listens for kAnnounceGrace, prints `line` unless `failure` is
  // a timeout that another rank's announcement explains, and aborts.
  [[noreturn]] void end_job(Failure failure, const std::string& line, int exit_code);
  std::string describe(const Expired& expired) const;
  // The deadline in force now, and how the line states it: "5 s" or
  // "auto: 20 s, the floor (...)".
  int64_t deadline_ns() const;
  std::string deadline_text() const;
  bool all_answered() const;
  [[noreturn]] void spin_forever() const;
  // CMPI_TEST_FAULT=stop: SIGSTOP to this process inside the chosen call.
  void stop_if_chosen(MPI_Comm comm);

  const std::string program_;
  const int rank_;
  const int size_;
  const TestFaults faults_;
  std::atomic<int64_t> timeout_ns_;  // fixed
  std::atomic<bool> automatic_{true};
  AutoDeadline auto_deadline_;
  std::atomic<int64_t> step_{-1};
  std::atomic<uint64_t> calls_{0};
  std::atomic<uint64_t> stop_group_calls_{0};
  std::array<Slot, kSlots> slots_;

  MPI_Comm channel_ = MPI_COMM_NULL;
  MPI_Request listening_ = MPI_REQUEST_NULL;
  int announcement_[2] = {};       // heard: Failure, exit code
  int sent_announcement_[2] = {};  // this rank's
  MPI_Request answer_listening_ = MPI_REQUEST_NULL;
  char answer_in_[kAnswerBytes] = {};
  // Per world rank: its answer to this rank's timeout ("" in a call's place
  // means in none), or unset while none came.
  std::vector<bool> answered_;
  std::vector<std::string> answers_;
  // Answers sent: buffers that live until MPI_Abort, as the announcements'.
  std::vector<std::array<char, kAnswerBytes>> sent_answers_;
  // What this rank heard: an error anywhere, and the lowest rank that timed out.
  bool heard_error_ = false;
  int lowest_timed_out_rank_ = -1;
  std::atomic<bool> ending_{false};

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  bool close_channel_ = false;
  bool channel_closed_ = false;
  std::thread thread_;
};

// The watchdog of this process, or nullptr (a test without a session).
Watchdog* installed_watchdog();

// Arms the calling thread's slot of the installed watchdog, if any, for the
// scope of one blocking call. `op` must be a string literal; `peer` is the
// rank in `comm` waited for (kAnyPeer: any or all of them).
class WatchedCall {
 public:
  static constexpr int kAnyPeer = -1;
  WatchedCall(const char* op, MPI_Comm comm, int peer = kAnyPeer);
  ~WatchedCall();
  WatchedCall(const WatchedCall&) = delete;
  WatchedCall& operator=(const WatchedCall&) = delete;

 private:
  Watchdog* watchdog_;
  Watchdog::Slot* slot_ = nullptr;
};

}  // namespace cmpi::comm
