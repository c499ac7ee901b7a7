// cmpi-bench: one executable, one subcommand per benchmark. A benchmark is a
// function taking the arguments after its name; adding one is one line in
// kSubcommands (plus the #include of its header).
#include <cstdio>
#include <cstring>
#include <exception>

#include "bench/codec_bench.h"
#include "bench/collective_bench.h"
#include "bench/gpu/device_bench.h"
#include "bench/sparsify_bench.h"

namespace {

struct Subcommand {
  const char* name;
  const char* summary;
  int (*run)(int argc, char** argv);
};

constexpr Subcommand kSubcommands[] = {
    {"codec", "codec ratio, speed and error on synthetic and captured data",
     cmpi::bench::run_codec_bench},
    {"collective", "collective latency: plain MPI vs raw and compressed Communicator",
     cmpi::bench::run_collective_bench},
    {"sparsify", "sidco vs exact top-k at a target density: time and achieved density",
     cmpi::bench::run_sparsify_bench},
};

void print_usage(std::FILE* to) {
  std::fprintf(to,
               "usage: cmpi-bench SUBCOMMAND [options]   (SUBCOMMAND --help for its options)\n");
  for (const auto& sub : kSubcommands) std::fprintf(to, "  %-12s %s\n", sub.name, sub.summary);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    print_usage(stderr);
    return 2;
  }
  if (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    print_usage(stdout);
    return 0;
  }
  for (const auto& sub : kSubcommands) {
    if (std::strcmp(argv[1], sub.name) != 0) continue;
    try {
      // --device cuda|fake: the device benchmarks of codec and collective.
      if (cmpi::bench::device_option(argc - 1, argv + 1)) {
        if (!std::strcmp(sub.name, "codec"))
          return cmpi::bench::run_device_codec_bench(argc - 1, argv + 1);
        if (!std::strcmp(sub.name, "collective"))
          return cmpi::bench::run_device_collective_bench(argc - 1, argv + 1);
      }
      return sub.run(argc - 1, argv + 1);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "cmpi-bench %s: %s\n", sub.name, e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "cmpi-bench: unknown subcommand '%s'\n", argv[1]);
  print_usage(stderr);
  return 2;
}
