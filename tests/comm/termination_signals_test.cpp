// report_termination_signals: a process that receives SIGTERM or SIGINT prints
// exactly one line naming its rank and the signal, then dies of that signal.
// Each case runs in a forked child whose stderr is a pipe read by the test.
#include "comm/termination_signals.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>

namespace cmpi::comm {
namespace {

struct ChildOutcome {
  std::string stderr_text;
  int killed_by = 0;   // the signal that ended the child; 0: it exited
  int exit_code = -1;  // when it exited
};

// Runs `child_body` in a child with the handlers installed (its stderr piped
// back) while the parent runs `parent_body(child's pid)`, then waits for it.
ChildOutcome run_child(const std::function<void()>& child_body,
                       const std::function<void(pid_t)>& parent_body) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return {};
  const pid_t child = ::fork();
  if (child == 0) {
    ::dup2(pipe_fds[1], STDERR_FILENO);
    ::close(pipe_fds[0]);
    report_termination_signals("cmpi-train", 2, 4);
    child_body();
    ::_exit(0);  // reached only if the handler did not end the process
  }
  ::close(pipe_fds[1]);
  parent_body(child);
  ChildOutcome outcome;
  char buf[256];
  ssize_t n;
  while ((n = ::read(pipe_fds[0], buf, sizeof buf)) > 0) outcome.stderr_text.append(buf, size_t(n));
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (WIFSIGNALED(status)) outcome.killed_by = WTERMSIG(status);
  if (WIFEXITED(status)) outcome.exit_code = WEXITSTATUS(status);
  return outcome;
}

ChildOutcome raise_in_child(int signal_number, int failing_exit_code = 0) {
  return run_child(
      [&] {
        if (failing_exit_code > 0) expect_termination(failing_exit_code);
        ::raise(signal_number);
      },
      [](pid_t) {});
}

void sleep_seconds(double seconds) {
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

// A child whose thread notes itself alive every 100 ms, as the watchdog's
// does, until the signal ends it (at most 10 s).
void tick_alive() {
  std::thread ticker([] {
    for (;;) {
      note_alive();
      sleep_seconds(0.1);
    }
  });
  ticker.detach();
  sleep_seconds(10);
}

TEST(TerminationSignals, SigtermPrintsOneLineAndDiesOfIt) {
  const auto outcome = raise_in_child(SIGTERM);
  EXPECT_EQ(outcome.stderr_text, "cmpi-train: rank 2/4: stopped by SIGTERM\n");
  EXPECT_EQ(outcome.killed_by, SIGTERM);
}

TEST(TerminationSignals, SigintPrintsOneLineAndDiesOfIt) {
  const auto outcome = raise_in_child(SIGINT);
  EXPECT_EQ(outcome.stderr_text, "cmpi-train: rank 2/4: stopped by SIGINT\n");
  EXPECT_EQ(outcome.killed_by, SIGINT);
}

// mpirun terminating the ranks of a job that already reported its error:
// no second line, and the job's exit code on every rank.
TEST(TerminationSignals, QuietOnceTheJobIsFailing) {
  for (int signal_number : {SIGTERM, SIGINT}) {
    const auto outcome = raise_in_child(signal_number, /*failing_exit_code=*/2);
    EXPECT_EQ(outcome.stderr_text, "");
    EXPECT_EQ(outcome.killed_by, 0);
    EXPECT_EQ(outcome.exit_code, 2);
  }
}

// A rank whose watchdog thread runs is not frozen: a SIGTERM is reported.
TEST(TerminationSignals, RunningRankReportsSigterm) {
  const auto outcome = run_child(tick_alive, [](pid_t child) {
    sleep_seconds(2.0);
    ::kill(child, SIGTERM);
  });
  EXPECT_EQ(outcome.stderr_text, "cmpi-train: rank 2/4: stopped by SIGTERM\n");
  EXPECT_EQ(outcome.killed_by, SIGTERM);
}

// mpirun's clean-up of a stopped rank that the others' watchdog named: the
// SIGTERM is taken in on SIGCONT, before any thread of the rank runs. It dies
// of it without a line (the rank used to print one: the handler went on
// writing after die_of, which returns while the signal is blocked).
TEST(TerminationSignals, FrozenRankDiesQuietly) {
  const auto outcome = run_child(tick_alive, [](pid_t child) {
    sleep_seconds(0.5);
    ::kill(child, SIGSTOP);
    sleep_seconds(2.0);
    ::kill(child, SIGTERM);
    ::kill(child, SIGCONT);
  });
  EXPECT_EQ(outcome.stderr_text, "");
  EXPECT_EQ(outcome.killed_by, SIGTERM);
}

// The same when the rank's watchdog thread runs between the SIGCONT and the
// SIGTERM: it noticed the gap, and the SIGTERM soon after is still quiet.
TEST(TerminationSignals, JustResumedRankDiesQuietly) {
  const auto outcome = run_child(tick_alive, [](pid_t child) {
    sleep_seconds(0.5);
    ::kill(child, SIGSTOP);
    sleep_seconds(2.0);
    ::kill(child, SIGCONT);
    sleep_seconds(0.5);
    ::kill(child, SIGTERM);
  });
  EXPECT_EQ(outcome.stderr_text, "");
  EXPECT_EQ(outcome.killed_by, SIGTERM);
}

}  // namespace
}  // namespace cmpi::comm
