#include "bench/collective_bench_options.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace cmpi::bench {
namespace {

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, separator))
    if (!part.empty()) parts.push_back(part);
  return parts;
}

std::string lower(std::string text) {
  for (char& c : text) c = char(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// Splits "200mbit" into 200 and "mbit"; throws naming `what` if no number leads.
std::pair<double, std::string> number_and_unit(const std::string& text, const std::string& what) {
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(begin, &end);
  if (end == begin || errno == ERANGE || !std::isfinite(value) || value < 0)
    throw std::invalid_argument(what + ": expected a non-negative number, got '" + text + "'");
  return {value, lower(std::string(end))};
}

int parse_int(const std::string& text, const std::string& what, int min, int max) {
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  long value = std::strtol(begin, &end, 10);
  if (end == begin || *end != '\0' || errno == ERANGE || value < min || value > max)
    throw std::invalid_argument(what + ": expected an integer in [" + std::to_string(min) + ", " +
                                std::to_string(max) + "], got '" + text + "'");
  return int(value);
}

double parse_seconds(const std::string& text, const std::string& what) {
  auto [value, unit] = number_and_unit(text, what);
  if (unit.empty() || unit == "s") return value;
  if (unit == "ms") return value * 1e-3;
  if (unit == "min") return value * 60;
  throw std::invalid_argument(what + ": unknown time unit in '" + text + "' (s, ms, min)");
}

std::vector<comm::Op> parse_ops(const std::string& text) {
  std::vector<comm::Op> ops;
  for (const auto& word : split(text, ',')) {
    auto op = comm::parse_op(word);
    if (!op || *op == comm::Op::kHalo)
      throw std::invalid_argument("--ops: unknown operation '" + word +
                                  "' (allreduce, allgather, reduce_scatter, alltoall, broadcast, "
                                  "p2p)");
    ops.push_back(*op);
  }
  if (ops.empty()) throw std::invalid_argument("--ops: empty list");
  return ops;
}

std::vector<size_t> size_ladder(size_t min_bytes, size_t max_bytes, int step) {
  if (min_bytes < 4) throw std::invalid_argument("--min-size: must be at least 4 bytes");
  if (max_bytes < min_bytes)
    throw std::invalid_argument("--max-size " + format_byte_size(max_bytes) +
                                " is below --min-size " + format_byte_size(min_bytes));
  std::vector<size_t> sizes;
  for (size_t s = min_bytes; s <= max_bytes; s *= size_t(step)) sizes.push_back(s);
  return sizes;
}

std::vector<compress::CodecSpec> default_codecs() {
  return {compress::CodecSpec::parse("identity"), compress::CodecSpec::parse("mpc"),
          compress::CodecSpec::parse("zfp:mode=rate,rate=8"),
          compress::CodecSpec::parse("zfp:mode=rate,rate=16")};
}

}  // namespace

size_t parse_byte_size(const std::string& text, const std::string& what) {
  auto [value, unit] = number_and_unit(text, what);
  double scale = 0;
  if (unit.empty() || unit == "b") scale = 1;
  if (unit == "k" || unit == "kib" || unit == "kb") scale = 1024.0;
  if (unit == "m" || unit == "mib" || unit == "mb") scale = 1024.0 * 1024;
  if (unit == "g" || unit == "gib" || unit == "gb") scale = 1024.0 * 1024 * 1024;
  if (scale == 0)
    throw std::invalid_argument(what + ": unknown size unit in '" + text + "' (B, KiB, MiB, GiB)");
  double bytes = value * scale;
  if (bytes != std::floor(bytes) || bytes > 1e15)
    throw std::invalid_argument(what + ": '" + text + "' is not a whole number of bytes");
  return size_t(bytes);
}

double parse_link_rate(const std::string& text) {
  auto [value, unit] = number_and_unit(text, "--link-rate");
  // tc's units: *bit are bits per second, *bps bytes per second, decimal prefixes.
  if (unit == "bit") return value;
  if (unit == "kbit") return value * 1e3;
  if (unit == "mbit") return value * 1e6;
  if (unit == "gbit") return value * 1e9;
  if (unit == "bps") return value * 8;
  if (unit == "kbps") return value * 8e3;
  if (unit == "mbps") return value * 8e6;
  if (unit == "gbps") return value * 8e9;
  throw std::invalid_argument("--link-rate: expected e.g. 200mbit or 1gbit, got '" + text + "'");
}

std::string format_byte_size(size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int unit = 0;
  while (unit < 3 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return std::to_string(bytes) + units[unit];
}

CollectiveBenchOptions parse_collective_bench_options(int argc, char** argv) {
  CollectiveBenchOptions options;
  options.ops = parse_ops("allreduce,allgather,reduce_scatter,alltoall,broadcast,p2p");
  size_t min_size = 4 << 10, max_size = size_t(64) << 20;
  int step = 4;
  std::string sizes_list;
  bool codecs_given = false, iterations_given = false, sizes_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + ": missing value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      options.help = true;
    } else if (arg == "--quick") {
      options.quick = true;
    } else if (arg == "--ops") {
      options.ops = parse_ops(value());
    } else if (arg == "--sizes") {
      sizes_list = value();
      sizes_given = true;
    } else if (arg == "--min-size") {
      min_size = parse_byte_size(value(), arg);
      sizes_given = true;
    } else if (arg == "--max-size") {
      max_size = parse_byte_size(value(), arg);
      sizes_given = true;
    } else if (arg == "--step") {
      step = parse_int(value(), arg, 2, 4);
      if (step == 3) throw std::invalid_argument("--step: must be 2 or 4, got 3");
      sizes_given = true;
    } else if (arg == "--codec") {
      if (!codecs_given) options.codecs.clear();
      codecs_given = true;
      // One --codec may list several specs separated by ';' (commas belong
      // to the spec's parameters: "zfp:mode=rate,rate=8").
      for (const auto& text : split(value(), ';'))
        if (text != "none") options.codecs.push_back(compress::CodecSpec::parse(text));
    } else if (arg == "--iters") {
      options.iterations = parse_int(value(), arg, 1, 1000000);
      iterations_given = true;
    } else if (arg == "--min-iters") {
      options.min_iterations = parse_int(value(), arg, 1, 1000000);
    } else if (arg == "--warmup") {
      options.warmup = parse_int(value(), arg, 0, 1000000);
    } else if (arg == "--point-seconds") {
      options.point_seconds = parse_seconds(value(), arg);
    } else if (arg == "--link-rate") {
      options.link_bits_per_second = parse_link_rate(value());
    } else if (arg == "--chunk") {
      options.chunk_bytes = parse_byte_size(value(), arg);
      if (options.chunk_bytes < 4) throw std::invalid_argument("--chunk: must be at least 4 bytes");
    } else if (arg == "--min-bytes") {
      const std::string text = value();
      options.codec_min_bytes =
          text == "default" ? -1 : int64_t(parse_byte_size(text, "--min-bytes"));
    } else if (arg == "--data") {
      options.data_path = value();
    } else if (arg == "--seed") {
      options.seed = uint64_t(parse_int(value(), arg, 0, 2147483647));
    } else if (arg == "--csv") {
      options.csv_path = value();
    } else if (arg == "--block-density") {
      const std::string text = value();
      char* end = nullptr;
      options.block_density = std::strtod(text.c_str(), &end);
      if (end == text.c_str() || *end != '\0' ||
          !(options.block_density >= 0 && options.block_density <= 1))
        throw std::invalid_argument("--block-density: expected a fraction in [0, 1], got '" + text +
                                    "'");
    } else if (arg == "--block") {
      options.block_floats = size_t(parse_int(value(), arg, 1, 1 << 20));
    } else {
      throw std::invalid_argument("unknown option '" + arg + "' (see --help)");
    }
  }
  if (!codecs_given) options.codecs = default_codecs();
  options.codecs_given = codecs_given;
  if (options.quick) {
    if (!sizes_given) sizes_list = "4KiB,64KiB,1MiB";
    if (!iterations_given) options.iterations = 3;
    options.min_iterations = std::min(options.min_iterations, 1);
    options.warmup = std::min(options.warmup, 1);
  }
  if (!sizes_list.empty()) {
    for (const auto& text : split(sizes_list, ','))
      options.sizes.push_back(parse_byte_size(text, "--sizes"));
    if (options.sizes.empty()) throw std::invalid_argument("--sizes: empty list");
  } else {
    options.sizes = size_ladder(min_size, max_size, step);
  }
  for (size_t s : options.sizes)
    if (s < 4 || s % 4 != 0)
      throw std::invalid_argument("message size " + std::to_string(s) +
                                  " bytes is not a positive multiple of 4 (float32 elements)");
  options.min_iterations = std::min(options.min_iterations, options.iterations);
  return options;
}

std::string collective_bench_usage() {
  return R"(usage: mpirun -np N cmpi-bench collective [options]
OSU-style latency of collectives, plain MPI vs the Communicator (raw and compressed),
side by side in one job. Per (op, size) every variant runs once per round, rounds are
barrier-synchronized, a round's time is the slowest rank's, the figure is the median.
  --ops LIST          allreduce,allgather,reduce_scatter,alltoall,broadcast,p2p (default: all)
  --sizes LIST        message sizes, e.g. 1MiB,16MiB (overrides the ladder below)
  --min-size S        smallest size of the ladder (default 4KiB)
  --max-size S        largest size of the ladder (default 64MiB)
  --step 2|4          ladder factor (default 4)
  --codec SPECS       compressed variants, ';'-separated or repeated: identity, mpc,
                      zfp:mode=rate,rate=8 ...; 'none' = no compressed variant
                      (default: identity;mpc;zfp rate 8;zfp rate 16)
  --iters N           timed rounds per point, at most (default 20)
  --min-iters N       rounds run even past --point-seconds (default 3)
  --warmup N          untimed rounds per point (default 2)
  --point-seconds T   stop adding rounds to a point after T seconds (default 20)
  --link-rate RATE    link rate for the wire bound, tc syntax: 200mbit, 1gbit
  --chunk S           pipelining chunk of the compressed path (default 1MiB)
  --min-bytes S       smallest message the codec rule compresses (default 0: always);
                      'default' keeps the policy's min_bytes, so that small sizes
                      show whether the policy leaves them raw (column comp)
  --data FILE         float32 tensor file (e.g. bench/data/gradients.f32; raw float32
                      is read with a warning), tiled to each size;
                      default: Gaussian N(0,1) data, seed --seed + rank
  --seed N            seed of the synthetic data (default 42)
  --block-density D   zero all but a fraction D of each rank's blocks (rank-seeded, so
                      ranks differ): the data of block_sparse:select=always|auto
  --block N           floats per block for --block-density (default 256)
  --csv FILE          write every row to FILE (rank 0)
  --quick             sizes 4KiB,64KiB,1MiB, 3 rounds, 1 warm-up (smoke test)
Message size = the whole buffer one rank holds: allreduce/broadcast/p2p the buffer,
allgather the gathered output, reduce_scatter the input, alltoall the send buffer.
)";
}

}  // namespace cmpi::bench
