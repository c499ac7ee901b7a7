#include "comm/termination_signals.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace cmpi::comm {
namespace {

// A signal handler receives nothing but the signal number, so the line it
// prints must be prepared beforehand in storage it can reach: this buffer is
// the one piece of process-wide state, written once before the handlers are
// installed and only read afterwards.
struct StopMessage {
  char prefix[256] = {};  // "cmpi-train: rank 2/4: stopped by "
  size_t prefix_length = 0;
};
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

void write_stop_line_and_exit(int signal_number) {
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
  ::_exit(128 + signal_number);
}

}  // namespace

void report_termination_signals(const std::string& program, int rank, int size) {
  const int length = std::snprintf(stop_message.prefix, sizeof stop_message.prefix,
                                   "%s: rank %d/%d: stopped by ", program.c_str(), rank, size);
  stop_message.prefix_length =
      length < 0 ? 0 : std::min(size_t(length), sizeof stop_message.prefix - 1);

  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = write_stop_line_and_exit;
  sigemptyset(&action.sa_mask);
  // Block the other termination signal while one is being reported, so that
  // a SIGINT arriving just after a SIGTERM does not print a second line.
  sigaddset(&action.sa_mask, SIGTERM);
  sigaddset(&action.sa_mask, SIGINT);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
}

}  // namespace cmpi::comm
