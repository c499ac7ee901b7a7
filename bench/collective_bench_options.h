// Options of `cmpi-bench collective`, parsed from its command line. Every
// rank parses the same argv, so no option needs broadcasting; a bad option
// throws std::invalid_argument naming it (the caller aborts the job).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "comm/group_kind.h"
#include "compress/codec_spec.h"

namespace cmpi::bench {

struct CollectiveBenchOptions {
  std::vector<comm::Op> ops;                // in the order they run
  std::vector<size_t> sizes;                // message bytes (see docs: per-op meaning)
  std::vector<compress::CodecSpec> codecs;  // compressed variants (none = MPI and raw only)
  bool codecs_given = false;                // false: the default list, minus unbuilt codecs
  int iterations = 20;                      // timed rounds per point, at most
  int min_iterations = 3;                   // rounds run even past the time budget
  int warmup = 2;                           // untimed rounds per point
  double point_seconds = 20;                // time budget of one (op, size) point
  double link_bits_per_second = 0;          // --link-rate; 0 = no wire bound
  size_t chunk_bytes = 1 << 20;             // pipelining chunk of the compressed path
  int64_t codec_min_bytes = 0;              // codec rule min_bytes; -1 = the policy default
  std::string data_path;                    // empty = Gaussian synthetic data
  uint64_t seed = 42;                       // of the synthetic data (rank r uses seed + r)
  // --block-density: keep each block of block_floats with this probability
  // per rank (rank-seeded, so ranks keep different blocks), zero the rest;
  // negative = dense data.
  double block_density = -1;
  size_t block_floats = 256;
  std::string csv_path;  // empty = no CSV
  bool quick = false;
  bool help = false;
};

// Throws std::invalid_argument naming the option and the value at fault.
CollectiveBenchOptions parse_collective_bench_options(int argc, char** argv);

std::string collective_bench_usage();

// "4KiB", "64MiB", "1M", "4096" -> bytes (binary units). Throws naming `what`.
size_t parse_byte_size(const std::string& text, const std::string& what);
// tc's spelling: "200mbit", "1gbit", "500kbit", "100mbps" (bytes) -> bits per second.
double parse_link_rate(const std::string& text);
// 4096 -> "4KiB", 16777216 -> "16MiB".
std::string format_byte_size(size_t bytes);

}  // namespace cmpi::bench
