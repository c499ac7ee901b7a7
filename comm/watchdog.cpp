#include "comm/watchdog.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "comm/clock.h"
#include "comm/termination_signals.h"

namespace cmpi::comm {

// Defined in comm/watched_mpi.cpp, beside the MPI functions that read it.
void set_installed_watchdog(Watchdog* watchdog);

namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

int64_t seconds_to_ns(double seconds) {
  if (!(seconds > 0)) return 0;
  return int64_t(std::min(seconds, 1e9) * 1e9);
}

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, seconds == std::floor(seconds) ? "%.0f s" : "%.1f s", seconds);
  return text;
}

// "0, 2, 3", or "world ranks 0 .. 63 but 5" would be clearer for many; the
// groups that wait for one rank are small, so a list up to a cap does.
std::string rank_list(const std::vector<int>& ranks) {
  constexpr size_t kShown = 16;
  std::string text;
  for (size_t i = 0; i < ranks.size() && i < kShown; ++i)
    text += (i ? ", " : "") + std::to_string(ranks[i]);
  if (ranks.size() > kShown) text += " and " + std::to_string(ranks.size() - kShown) + " more";
  return text;
}

// A line written with one write(2), so that ranks sharing a terminal do not
// interleave theirs.
void print_line(const std::string& line) {
  const std::string text = line + "\n";
  [[maybe_unused]] const ssize_t ignored = ::write(STDERR_FILENO, text.data(), text.size());
}

}  // namespace

// ------------------------------------------------------------ lifetime

Watchdog::Watchdog(std::string program, int world_rank, int world_size, const TestFaults& faults)
    : program_(std::move(program)),
      rank_(world_rank),
      size_(world_size),
      faults_(faults),
      timeout_ns_(seconds_to_ns(AutoDeadline::kLongAllowanceSeconds)) {
  if (installed_watchdog() != nullptr)
    throw std::logic_error("a second Watchdog while one is installed");
  int provided = MPI_THREAD_SINGLE;
  PMPI_Query_thread(&provided);
  if (provided == MPI_THREAD_MULTIPLE && size_ > 1) {
    PMPI_Comm_dup(MPI_COMM_WORLD, &channel_);
    PMPI_Irecv(announcement_, 2, MPI_INT, MPI_ANY_SOURCE, kFailingTag, channel_, &listening_);
    PMPI_Irecv(answer_in_, kAnswerBytes, MPI_CHAR, MPI_ANY_SOURCE, kAnswerTag, channel_,
               &answer_listening_);
  }
  answered_.assign(size_t(size_), false);
  answers_.assign(size_t(size_), "");
  // Thousands of answers would take a job of thousands of ranks timing out
  // one after another; a few per rank is what a job sees.
  sent_answers_.reserve(size_t(size_));
  set_installed_watchdog(this);
  thread_ = std::thread([this] { run(); });
}

Watchdog::~Watchdog() {
  close_channel();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  set_installed_watchdog(nullptr);
}

void Watchdog::close_channel() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (channel_ == MPI_COMM_NULL) return;
  // The thread owns the receive; it cancels it on its next tick.
  close_channel_ = true;
  wake_.notify_all();
  wake_.wait(lock, [this] { return channel_closed_; });
  PMPI_Comm_free(&channel_);
}

void Watchdog::set_timeout(double seconds) {
  timeout_ns_.store(seconds_to_ns(seconds), std::memory_order_relaxed);
  automatic_.store(false, std::memory_order_relaxed);
}

void Watchdog::use_auto_timeout(double floor_seconds) {
  auto_deadline_.set_floor(floor_seconds);
  automatic_.store(true, std::memory_order_relaxed);
}

void Watchdog::note_step(int64_t step) {
  step_.store(step, std::memory_order_relaxed);
  auto_deadline_.step_started();
}

int64_t Watchdog::deadline_ns() const {
  return automatic_.load(std::memory_order_relaxed) ? auto_deadline_.deadline_ns()
                                                    : timeout_ns_.load(std::memory_order_relaxed);
}

std::string Watchdog::deadline_text() const {
  return automatic_.load(std::memory_order_relaxed)
             ? auto_deadline_.explain()
             : seconds_text(double(timeout_ns_.load(std::memory_order_relaxed)) / 1e9);
}

// ------------------------------------------------------------ arming

Watchdog::Slot* Watchdog::enter(const char* op, MPI_Comm comm, int peer) {
  const std::thread::id me = std::this_thread::get_id();
  // A call nested in one this thread is already in: the outer one stays armed.
  for (Slot& slot : slots_)
    if (slot.owner.load(std::memory_order_relaxed) == me) {
      slot.depth += 1;
      return &slot;
    }
  if (faults_.spin_rank == rank_ &&
      calls_.fetch_add(1, std::memory_order_relaxed) + 1 == faults_.spin_at_call)
    spin_forever();
  for (Slot& slot : slots_) {
    std::thread::id free{};
    if (!slot.owner.compare_exchange_strong(free, me, std::memory_order_acquire)) continue;
    slot.depth = 1;
    slot.op.store(op, std::memory_order_relaxed);
    slot.comm.store(comm, std::memory_order_relaxed);
    slot.peer.store(peer, std::memory_order_relaxed);
    slot.entered_ns.store(now_ns(), std::memory_order_release);
    if (faults_.stop_rank == rank_) stop_if_chosen(comm);
    return &slot;
  }
  return nullptr;  // more threads in calls than slots: this call goes unwatched
}

void Watchdog::leave(Slot* slot) {
  if (--slot->depth > 0) return;
  auto_deadline_.call_finished(now_ns() - slot->entered_ns.load(std::memory_order_relaxed));
  slot->entered_ns.store(0, std::memory_order_relaxed);
  slot->owner.store(std::thread::id{}, std::memory_order_release);
}

void Watchdog::spin_forever() const {
  print_line(program_ + ": rank " + std::to_string(rank_) + "/" + std::to_string(size_) +
             ": test fault: spinning at communication call " +
             std::to_string(faults_.spin_at_call) + " (" + TestFaults::kVariable + ")");
  volatile uint64_t turns = 0;
  for (;;) turns = turns + 1;
}

void Watchdog::stop_if_chosen(MPI_Comm comm) {
  char name[MPI_MAX_OBJECT_NAME] = {};
  int length = 0;
  if (comm != MPI_COMM_NULL) PMPI_Comm_get_name(comm, name, &length);
  if (faults_.stop_group != std::string(name, size_t(length)) ||
      stop_group_calls_.fetch_add(1, std::memory_order_relaxed) + 1 != faults_.stop_at_call)
    return;
  print_line(program_ + ": rank " + std::to_string(rank_) + "/" + std::to_string(size_) +
             ": test fault: stopping inside communication call " +
             std::to_string(faults_.stop_at_call) + " on " + faults_.stop_group + " (" +
             TestFaults::kVariable + ")");
  ::raise(SIGSTOP);
}

WatchedCall::WatchedCall(const char* op, MPI_Comm comm, int peer)
    : watchdog_(installed_watchdog()) {
  if (watchdog_ != nullptr) slot_ = watchdog_->enter(op, comm, peer);
}

WatchedCall::~WatchedCall() {
  if (slot_ != nullptr) watchdog_->leave(slot_);
}

// ------------------------------------------------------------ the thread

void Watchdog::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    wake_.wait_for(lock, kTick);
    note_alive();  // a termination signal can tell a frozen rank (termination_signals.h)
    if (channel_ != MPI_COMM_NULL && !channel_closed_) {
      if (close_channel_) {
        PMPI_Cancel(&listening_);
        PMPI_Wait(&listening_, MPI_STATUS_IGNORE);
        PMPI_Cancel(&answer_listening_);
        PMPI_Wait(&answer_listening_, MPI_STATUS_IGNORE);
        channel_closed_ = true;
        wake_.notify_all();
      } else {
        listen_for_announcements();
      }
    }
    Expired expired;
    if (!find_expired(expired)) continue;
    lock.unlock();
    end_job(kTimeout, "watchdog: " + describe(expired), kExitCode);
  }
}

void Watchdog::listen_for_announcements() {
  if (channel_ == MPI_COMM_NULL || channel_closed_) return;
  take_answers();
  for (;;) {
    int heard = 0;
    MPI_Status status;
    PMPI_Test(&listening_, &heard, &status);
    if (!heard) return;
    // Another rank is ending the job: mpirun will terminate this one.
    expect_termination(announcement_[1]);
    if (announcement_[0] == kError) heard_error_ = true;
    if (announcement_[0] == kTimeout &&
        (lowest_timed_out_rank_ < 0 || status.MPI_SOURCE < lowest_timed_out_rank_))
      lowest_timed_out_rank_ = status.MPI_SOURCE;
    if (announcement_[0] == kTimeout) answer(status.MPI_SOURCE);
    PMPI_Irecv(announcement_, 2, MPI_INT, MPI_ANY_SOURCE, kFailingTag, channel_, &listening_);
  }
}

void Watchdog::answer(int rank) {
  // Bounded: a rank answers each timeout once, and every rank times out at
  // most once.
  if (sent_answers_.size() == sent_answers_.capacity()) return;
  std::array<char, kAnswerBytes>& text = sent_answers_.emplace_back();
  const std::string where = where_now();
  std::snprintf(text.data(), text.size(), "%s", where.c_str());
  MPI_Request request;
  PMPI_Isend(text.data(), kAnswerBytes, MPI_CHAR, rank, kAnswerTag, channel_, &request);
  PMPI_Request_free(&request);
}

void Watchdog::take_answers() {
  for (;;) {
    int heard = 0;
    MPI_Status status;
    PMPI_Test(&answer_listening_, &heard, &status);
    if (!heard) return;
    answer_in_[kAnswerBytes - 1] = '\0';
    answered_[size_t(status.MPI_SOURCE)] = true;
    answers_[size_t(status.MPI_SOURCE)] = answer_in_;
    PMPI_Irecv(answer_in_, kAnswerBytes, MPI_CHAR, MPI_ANY_SOURCE, kAnswerTag, channel_,
               &answer_listening_);
  }
}

std::string Watchdog::where_now() const {
  int64_t oldest = 0;
  const Slot* found = nullptr;
  for (const Slot& slot : slots_) {
    const int64_t entered = slot.entered_ns.load(std::memory_order_acquire);
    if (entered != 0 && (found == nullptr || entered < oldest)) {
      oldest = entered;
      found = &slot;
    }
  }
  if (found == nullptr) return "";
  const char* op = found->op.load(std::memory_order_relaxed);
  const MPI_Comm comm = found->comm.load(std::memory_order_relaxed);
  std::string text = op ? op : "communication call";
  char name[MPI_MAX_OBJECT_NAME] = {};
  int length = 0;
  if (comm != MPI_COMM_NULL) PMPI_Comm_get_name(comm, name, &length);
  return text + " on " + (length > 0 ? name : "(unnamed)");
}

bool Watchdog::all_answered() const {
  for (int r = 0; r < size_; ++r)
    if (r != rank_ && !answered_[size_t(r)]) return false;
  return true;
}

std::string Watchdog::answers_text() const {
  if (channel_ == MPI_COMM_NULL) return "";
  std::vector<int> silent, outside;
  std::vector<std::pair<std::string, std::vector<int>>> waiting;  // by where, in rank order
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    if (!answered_[size_t(r)]) {
      silent.push_back(r);
    } else if (answers_[size_t(r)].empty()) {
      outside.push_back(r);
    } else {
      auto at = std::find_if(waiting.begin(), waiting.end(),
                             [&](const auto& w) { return w.first == answers_[size_t(r)]; });
      if (at == waiting.end()) at = waiting.insert(waiting.end(), {answers_[size_t(r)], {}});
      at->second.push_back(r);
    }
  }
  const auto ranks = [](const std::vector<int>& list) {
    return std::string("world rank") + (list.size() == 1 ? " " : "s ") + rank_list(list);
  };
  std::string text;
  if (!silent.empty()) text += "; " + ranks(silent) + " did not answer (stopped or dead)";
  if (!outside.empty())
    text += "; " + ranks(outside) + (outside.size() == 1 ? " is" : " are") +
            " in no communication call (computing, or stuck in its own code)";
  for (const auto& [where, list] : waiting)
    text += "; " + ranks(list) + (list.size() == 1 ? " waits" : " wait") + " in " + where;
  return text;
}

bool Watchdog::find_expired(Expired& out) const {
  const int64_t timeout = deadline_ns();
  if (timeout == 0) return false;
  const int64_t now = now_ns();
  for (const Slot& slot : slots_) {
    const int64_t entered = slot.entered_ns.load(std::memory_order_acquire);
    if (entered == 0 || now - entered <= timeout) continue;
    out.op = slot.op.load(std::memory_order_relaxed);
    out.comm = slot.comm.load(std::memory_order_relaxed);
    out.peer = slot.peer.load(std::memory_order_relaxed);
    out.waited_seconds = double(now - entered) / 1e9;
    // Still the same call: the fields above belong to it.
    if (slot.entered_ns.load(std::memory_order_acquire) == entered) return true;
  }
  return false;
}

// "allreduce on group dp of 4 ranks has waited 5.1 s, over run.timeout
// (5 s), at step 12, for world ranks 0, 2, 3" (end_job adds what the other
// ranks answered: which of them never arrived)
std::string Watchdog::describe(const Expired& e) const {
  std::string text = std::string(e.op ? e.op : "communication call");
  std::vector<int> waited_for;
  if (e.comm != MPI_COMM_NULL) {
    char name[MPI_MAX_OBJECT_NAME] = {};
    int length = 0;
    PMPI_Comm_get_name(e.comm, name, &length);
    int size = 0, rank = 0;
    PMPI_Comm_size(e.comm, &size);
    PMPI_Comm_rank(e.comm, &rank);
    // The group's ranks as world ranks (a local query, no communication).
    MPI_Group group, world;
    PMPI_Comm_group(e.comm, &group);
    PMPI_Comm_group(MPI_COMM_WORLD, &world);
    std::vector<int> group_ranks(static_cast<size_t>(size)), world_ranks(static_cast<size_t>(size));
    for (int r = 0; r < size; ++r) group_ranks[size_t(r)] = r;
    PMPI_Group_translate_ranks(group, size, group_ranks.data(), world, world_ranks.data());
    PMPI_Group_free(&group);
    PMPI_Group_free(&world);
    text += std::string(" on group ") + (length > 0 ? name : "(unnamed)") + " of " +
            std::to_string(size) + " rank" + (size == 1 ? "" : "s");
    if (e.peer >= 0 && e.peer < size) {
      waited_for.push_back(world_ranks[size_t(e.peer)]);
    } else {
      for (int r = 0; r < size; ++r)
        if (r != rank) waited_for.push_back(world_ranks[size_t(r)]);
    }
  }
  text += " has waited " + seconds_text(e.waited_seconds) + ", over run.timeout (" +
          deadline_text() + ")";
  const int64_t step = step_.load(std::memory_order_relaxed);
  if (step >= 0) text += ", at step " + std::to_string(step);
  if (!waited_for.empty())
    text += std::string(", for world rank") + (waited_for.size() == 1 ? " " : "s ") +
            rank_list(waited_for);
  return text;
}

// ------------------------------------------------------------ ending the job

void Watchdog::abort_job(const std::string& message, int exit_code) {
  end_job(kError, "error: " + message, exit_code);
}

void Watchdog::end_job(Failure failure, const std::string& line, int exit_code) {
  // Whichever comes first (a deadline or the caller's error) ends the job;
  // a second one waits for the first to finish it.
  if (ending_.exchange(true))
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  // This rank's end is its own doing: mpirun's terminating it is no news.
  expect_termination(exit_code);
  bool explained_elsewhere = false;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    listen_for_announcements();
    // A deadline that passed after another rank failed is that failure's echo.
    const bool heard_before = heard_error_ || lowest_timed_out_rank_ >= 0;
    const bool announced = !(failure == kTimeout && heard_before);
    if (announced) announce(failure, exit_code);
    // A timeout this rank announced waits for the others' answers (all of
    // them, or kAnswerWait), an error only for its announcement to spread.
    const bool awaits_answers = failure == kTimeout && announced;
    const auto start = Clock::now();
    while (Clock::now() < start + kAnnounceGrace ||
           (awaits_answers && Clock::now() < start + kAnswerWait && !all_answered())) {
      wake_.wait_for(lock, kTick / 4);
      listen_for_announcements();
    }
    explained_elsewhere =
        failure == kTimeout && (heard_before || heard_error_ ||
                                (lowest_timed_out_rank_ >= 0 && lowest_timed_out_rank_ < rank_));
    if (!explained_elsewhere) {
      const std::string answers = failure == kTimeout ? answers_text() : "";
      print_line(program_ + ": rank " + std::to_string(rank_) + "/" + std::to_string(size_) + ": " +
                 line + answers + (failure == kTimeout ? "; ending the job" : ""));
    }
  }
  if (explained_elsewhere) {
    // The rank that explains it aborts the job as soon as it printed; this
    // rank's own abort is only the fallback, should that rank not get there.
    // (It answered that rank while listening above: a rank is quiet only
    // for announcements it heard.)
    std::this_thread::sleep_for(kQuietAbortDelay);
  }
  PMPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);
}

void Watchdog::announce(Failure failure, int exit_code) {
  if (channel_ == MPI_COMM_NULL || channel_closed_) return;
  // Sent from a buffer that lives until MPI_Abort; the requests are left to
  // it too: a stopped rank never receives its announcement, and nothing may
  // wait for it.
  static_assert(sizeof(Failure) == sizeof(int), "announcements are two ints");
  sent_announcement_[0] = failure;
  sent_announcement_[1] = exit_code;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    MPI_Request request;
    PMPI_Isend(sent_announcement_, 2, MPI_INT, r, kFailingTag, channel_, &request);
  }
}

}  // namespace cmpi::comm
