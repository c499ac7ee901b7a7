#include "bench/machine_info.h"

#include <omp.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <thread>

#ifndef CMPI_BUILD_TYPE
#define CMPI_BUILD_TYPE "unknown"
#endif

namespace cmpi::bench {
namespace {

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    auto colon = line.find(':');
    if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
  }
  return "unknown";
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

std::string utc_now() {
  std::time_t now = std::time(nullptr);
  std::tm parts{};
  gmtime_r(&now, &parts);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &parts);
  return text;
}

}  // namespace

double load_average() {
  std::ifstream file("/proc/loadavg");
  double one_minute = -1;
  if (!(file >> one_minute)) return -1;
  return one_minute;
}

std::vector<std::string> describe_machine() {
  std::vector<std::string> lines;
  lines.push_back("cpu: " + cpu_model());
  lines.push_back("hardware threads: " + std::to_string(std::thread::hardware_concurrency()) +
                  ", OpenMP max threads: " + std::to_string(omp_get_max_threads()));
  char load[32];
  std::snprintf(load, sizeof load, "%.2f", load_average());
  lines.push_back(std::string("load average (1 min) at start: ") + load);
  lines.push_back("host: " + host_name() + ", date: " + utc_now());
  lines.push_back(std::string("compiler: ") + __VERSION__ + ", build type: " + CMPI_BUILD_TYPE);
  return lines;
}

std::string command_line(int argc, char** argv) {
  std::string out;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (!out.empty()) out += ' ';
    out += arg.find_first_of(" \t\"'") == std::string::npos ? arg : "'" + arg + "'";
  }
  return out;
}

}  // namespace cmpi::bench
