// What a benchmark ran on, for the header of its output: CPU model, cores,
// threads, load average (a busy machine gives noisy figures), compiler, build
// type, date, host.
#pragma once

#include <string>
#include <vector>

namespace cmpi::bench {

// "key: value" lines, no trailing newlines.
std::vector<std::string> describe_machine();

// The 1-minute load average, or -1 where /proc/loadavg is unavailable.
double load_average();

// argv joined with spaces, arguments holding spaces quoted.
std::string command_line(int argc, char** argv);

}  // namespace cmpi::bench
