// `cmpi-bench codec`: ratio, encode/decode speed (one thread and all threads)
// and error of every registered codec at the settings in codec_settings.cpp,
// next to lossless reference points (memcpy, zstd, LZ4, Blosc), on synthetic
// Gaussian data and on gradients/activations captured from the project's GPT.
// Prints an aligned table and writes the rows as CSV (docs/benchmarks.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cmpi::bench {

struct CodecBenchOptions {
  bool quick = false;
  bool help = false;
  std::vector<std::string> codecs;      // names or full specs; empty: every registered codec
  std::vector<std::string> references;  // families; empty: all; {"none"}: none
  std::vector<std::string> datasets;    // dataset names to keep; empty: all
  std::vector<std::string> data_files;  // extra float32 files (tensor files or raw)
  std::string data_dir;                 // holds gradients.f32 and activations.f32
  size_t size = 0;                      // synthetic elements, and cap for files
  int repeats = 0;
  int threads = 0;
  bool cpu_clock = false;  // time the single-thread runs by thread CPU time
  std::string csv_path = "bench_codec.csv";
  uint64_t seed = 42;
};

// Parses the arguments after "codec". Throws std::invalid_argument naming
// the bad option or value.
CodecBenchOptions parse_codec_bench_args(int argc, char** argv);

// "16Mi" -> 16777216, "1M" -> 1000000, "4096" -> 4096. Throws
// std::invalid_argument naming `option` on anything else or on zero.
size_t parse_count(const std::string& option, const std::string& text);

std::string codec_bench_usage();

// argv[0] is "codec". Returns 0 when every setting ran, 1 if any failed
// (each failure is printed, the rest still run), 2 on bad arguments.
int run_codec_bench(int argc, char** argv);

}  // namespace cmpi::bench
