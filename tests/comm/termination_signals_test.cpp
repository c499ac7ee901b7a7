// report_termination_signals: a process that receives SIGTERM or SIGINT prints
// exactly one line naming its rank and the signal, then dies of that signal.
// Each case runs in a forked child whose stderr is a pipe read by the test.
#include "comm/termination_signals.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace cmpi::comm {
namespace {

struct ChildOutcome {
  std::string stderr_text;
  int killed_by = 0;   // the signal that ended the child; 0: it exited
  int exit_code = -1;  // when it exited
};

ChildOutcome raise_in_child(int signal_number, int failing_exit_code = 0) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return {};
  const pid_t child = ::fork();
  if (child == 0) {
    ::dup2(pipe_fds[1], STDERR_FILENO);
    ::close(pipe_fds[0]);
    report_termination_signals("cmpi-train", 2, 4);
    if (failing_exit_code > 0) expect_termination(failing_exit_code);
    ::raise(signal_number);
    ::_exit(0);  // reached only if the handler did not end the process
  }
  ::close(pipe_fds[1]);
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

}  // namespace
}  // namespace cmpi::comm
