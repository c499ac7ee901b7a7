#include "comm/termination_signals.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>

namespace cmpi::comm {
namespace {

// A signal handler receives nothing but the signal number, so the line it
// prints must be prepared beforehand in storage it can reach: this buffer is
// the one piece of process-wide state, written once before the handlers are
// installed and only read afterwards (but for the quiet exit code, which any
// thread may set once the job is failing).
struct StopMessage {
  char prefix[256] = {};  // "cmpi-train: rank 2/4: stopped by "
  size_t prefix_length = 0;
  // Written by other threads (the watchdog's, the one that fails the job)
  // than the one the handler runs on: volatile sig_atomic_t is safe only
  // within one thread, so these are lock-free atomics, which a handler may
  // use too (ThreadSanitizer reported the race: termination_signals_test
  // under scripts/test.sh --sanitize thread).
  std::atomic<int> quiet_exit_code{0};  // > 0: the job is failing, exit silently
  // note_alive()'s last CLOCK_MONOTONIC time in tenths of a second (0: never).
  std::atomic<int> alive_decis{0};
  // When note_alive() last found such a gap since the call before: the
  // process has just been resumed (its watchdog thread may run before the
  // handler of the SIGTERM that came with the SIGCONT).
  std::atomic<int> resumed_decis{0};
};
static_assert(std::atomic<int>::is_always_lock_free,
              "a signal handler may use only lock-free atomics");
StopMessage stop_message;

const char* signal_name(int signal_number) {
  switch (signal_number) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    default:
      return "a signal";
  }
}

// A rank whose threads did not run for this long was frozen (SIGSTOP): the
// watchdog's thread notes itself alive every tick, well under a second.
constexpr int kFrozenAfterDecis = 15;

int monotonic_decis() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return int(now.tv_sec % 100000000) * 10 + int(now.tv_nsec / 100000000);
}

// Whether this process was frozen until the signal came (see the header).
bool was_frozen(int now) {
  const int alive = stop_message.alive_decis.load(), resumed = stop_message.resumed_decis.load();
  return (alive > 0 && now - alive > kFrozenAfterDecis) ||
         (resumed > 0 && now - resumed <= kFrozenAfterDecis);
}

void write_stop_line(int signal_number) {
  char line[sizeof stop_message.prefix + 16];
  size_t length = stop_message.prefix_length;
  std::memcpy(line, stop_message.prefix, length);
  const char* name = signal_name(signal_number);
  const size_t name_length = std::strlen(name);
  std::memcpy(line + length, name, name_length);
  length += name_length;
  line[length++] = '\n';
  // One write(2) so that the lines of ranks sharing a terminal do not mix;
  // its result is ignored because nothing else can be done from here.
  [[maybe_unused]] const ssize_t ignored = ::write(STDERR_FILENO, line, length);
}

void die_of(int signal_number);

void write_stop_line_and_die(int signal_number) {
  const int quiet_exit_code = stop_message.quiet_exit_code.load();
  if (quiet_exit_code > 0) ::_exit(quiet_exit_code);
  if (!was_frozen(monotonic_decis())) write_stop_line(signal_number);
  // Last: die_of returns (the signal takes effect when this handler does),
  // so nothing may follow it.
  die_of(signal_number);
}

void die_of(int signal_number) {
  // Die of the signal itself, as without this handler: mpirun treats a rank
  // that it killed but that exited with a status as a second, separate
  // failure, and garbles the report of the first (OpenMPI 4.1). The signal
  // is blocked while its handler runs, so raise() takes effect on return.
  struct sigaction default_action;
  std::memset(&default_action, 0, sizeof default_action);
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  sigaction(signal_number, &default_action, nullptr);
  ::raise(signal_number);
}

}  // namespace

void note_alive() {
  const int now = monotonic_decis(), before = stop_message.alive_decis.load();
  if (before > 0 && now - before > kFrozenAfterDecis) stop_message.resumed_decis.store(now);
  stop_message.alive_decis.store(now);
}

void expect_termination(int exit_code) {
  stop_message.quiet_exit_code.store(exit_code > 0 ? exit_code : 1);
}

void report_termination_signals(const std::string& program, int rank, int size) {
  const int length = std::snprintf(stop_message.prefix, sizeof stop_message.prefix,
                                   "%s: rank %d/%d: stopped by ", program.c_str(), rank, size);
  stop_message.prefix_length =
      length < 0 ? 0 : std::min(size_t(length), sizeof stop_message.prefix - 1);

  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = write_stop_line_and_die;
  sigemptyset(&action.sa_mask);
  // Block the other termination signal while one is being reported, so that
  // a SIGINT arriving just after a SIGTERM does not print a second line.
  sigaddset(&action.sa_mask, SIGTERM);
  sigaddset(&action.sa_mask, SIGINT);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
}

}  // namespace cmpi::comm
