// How a point is measured: for one (op, size), every variant (plain MPI,
// the Communicator with a raw policy, the Communicator with a policy forcing
// each codec) runs once per round, in turn, on the same buffers; before each
// call the inputs are restored and the ranks meet at a barrier, and the
// call's time is the slowest rank's (MPI_MAX). Interleaving the variants
// round by round keeps a background load from favouring one of them. After
// `warmup` untimed rounds, rounds are added until `iterations`, or until the
// point's time budget is spent once `min_iterations` ran; all ranks take that
// decision from the same reduced numbers. The median round is reported.
//
// The codec-only figures (encode and decode of S bytes of this rank's data,
// in the policy's chunks, all ranks at once, slowest rank, median) are taken
// in the same job before the collectives of each size, so that the bounds of
// collective_bench_bounds.h compare like with like.
#include "bench/collective_bench.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/bench_dataset.h"
#include "bench/codec_subject.h"
#include "bench/collective_bench_bounds.h"
#include "bench/collective_bench_ops.h"
#include "bench/collective_bench_options.h"
#include "bench/collective_bench_report.h"
#include "bench/machine_info.h"
#include "bench/measurement.h"
#include "comm/communicator.h"
#include "comm/mpi_session.h"
#include "comm/policy.h"
#include "compress/codec_registry.h"

namespace cmpi::bench {
namespace {

// One way of moving the data: the plain MPI call, or a Communicator whose
// policy sends everything raw (`codec` empty) or through one codec.
struct Variant {
  std::string label;
  std::optional<compress::CodecSpec> codec;
  MPI_Comm plain_comm = MPI_COMM_NULL;  // plain MPI only
  std::unique_ptr<comm::Communicator> communicator;
  bool plain() const { return !communicator; }
};

// A policy with one rule for any group, op and role: this codec, from
// min_bytes up (0: every message); or, without a codec, no rule at all
// (everything raw).
comm::PolicyConfig forcing_policy(const std::optional<compress::CodecSpec>& codec,
                                  size_t chunk_bytes, int64_t min_bytes) {
  comm::PolicyConfig config;
  config.preset = "none";
  config.chunk_bytes = int64_t(chunk_bytes);
  config.error_sample_rate = 0;  // the benchmark measures error itself, outside the timing
  if (codec) {
    comm::PolicyRule rule;
    rule.match.min_bytes = min_bytes;  // -1: the policy's default
    rule.codec = *codec;
    rule.origin = "cmpi-bench collective --codec " + codec->to_string();
    config.rules.push_back(rule);
  }
  return config;
}

std::unique_ptr<comm::Communicator> make_policy_communicator(MPI_Comm comm,
                                                             const comm::PolicyConfig& config) {
  comm::Policy policy(config);
  return std::make_unique<comm::Communicator>(
      comm, comm::GroupKind::kWorld,
      std::make_unique<comm::PolicySlice>(policy, comm::GroupKind::kWorld));
}

std::vector<Variant> make_variants(const CollectiveBenchOptions& options) {
  std::vector<Variant> variants;
  Variant plain;
  plain.label = "mpi";
  MPI_Comm_dup(MPI_COMM_WORLD, &plain.plain_comm);
  variants.push_back(std::move(plain));
  std::vector<std::optional<compress::CodecSpec>> codecs = {std::nullopt};
  for (const auto& spec : options.codecs) codecs.emplace_back(spec);
  for (const auto& codec : codecs) {
    Variant variant;
    variant.label = codec ? compact_spec(*codec) : "none";
    variant.codec = codec;
    MPI_Comm dup = MPI_COMM_NULL;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    variant.communicator = make_policy_communicator(
        dup, forcing_policy(codec, options.chunk_bytes, options.codec_min_bytes));
    variants.push_back(std::move(variant));
  }
  return variants;
}

// Default codecs that this build lacks are dropped with a note; codecs the
// user named must exist (the registry's error names the culprit).
std::vector<compress::CodecSpec> usable_codecs(const CollectiveBenchOptions& options, bool speak) {
  const auto registry = compress::CodecRegistry::with_builtin_codecs();
  std::vector<compress::CodecSpec> usable;
  for (const auto& spec : options.codecs) {
    if (!options.codecs_given && !registry.contains(spec.name())) {
      if (speak) std::printf("# note: codec '%s' is not built; skipped\n", spec.name().c_str());
      continue;
    }
    registry.create(spec);  // throws CodecError naming the codec or parameter
    usable.push_back(spec);
  }
  return usable;
}

// This rank's data: max_bytes of Gaussian N(0,1) (seed + rank), or the
// --data file tiled from an offset that differs per rank, so ranks hold
// different values with the same statistics, as gradients of data-parallel
// replicas do.
std::vector<float> make_dense_rank_data(const CollectiveBenchOptions& options, size_t max_bytes,
                                        int rank, int size, std::string& label) {
  const size_t n = max_bytes / sizeof(float);
  if (options.data_path.empty()) {
    label = "gaussian";
    return make_gaussian_dataset(n, options.seed + uint64_t(rank)).values;
  }
  Dataset file = load_f32_dataset(dataset_name_from_path(options.data_path), options.data_path, 0);
  label = file.name;
  const size_t length = file.values.size();
  const size_t offset = size_t(rank) * (length / size_t(size));
  std::vector<float> data(n);
  for (size_t i = 0; i < n; ++i) data[i] = file.values[(offset + i) % length];
  return data;
}

// With --block-density D: each block of the dense data kept with
// probability D (a generator seeded by seed and rank), the others zeroed.
std::vector<float> make_rank_data(const CollectiveBenchOptions& options, size_t max_bytes, int rank,
                                  int size, std::string& label) {
  std::vector<float> data = make_dense_rank_data(options, max_bytes, rank, size, label);
  if (options.block_density < 0) return data;
  std::mt19937_64 rng(options.seed * 7919 + uint64_t(rank) + 1);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  size_t kept = 0, blocks = 0;
  for (size_t start = 0; start < data.size(); start += options.block_floats, ++blocks) {
    const size_t end = std::min(data.size(), start + options.block_floats);
    if (unit(rng) < options.block_density)
      ++kept;
    else
      std::fill(data.begin() + std::ptrdiff_t(start), data.begin() + std::ptrdiff_t(end), 0.f);
  }
  char text[96];
  std::snprintf(text, sizeof text, ", %zu of %zu blocks of %zu kept", kept, blocks,
                options.block_floats);
  label += text;
  return data;
}

struct CodecFigures {
  double encode_seconds = 0;
  double decode_seconds = 0;
  double ratio = 1;
};

// Encodes and decodes data[0..n) chunk by chunk, as the compressed path
// does, on every rank at once.
CodecFigures measure_codec(const compress::CodecSpec& spec, const float* data, size_t n,
                           const CollectiveBenchOptions& options) {
  auto codec = compress::make_codec(spec);
  const size_t chunk = std::max<size_t>(1, options.chunk_bytes / sizeof(float));
  const size_t chunks = (n + chunk - 1) / chunk;
  std::vector<uint8_t> payload(codec->max_encoded_bytes(chunk) * chunks);
  std::vector<size_t> offsets(chunks + 1, 0), sizes(chunks, 0);
  std::vector<float> decoded(n);
  std::vector<double> encode_samples, decode_samples;
  double spent = 0;
  for (int round = 0; round < options.warmup + options.iterations; ++round) {
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (size_t c = 0, at = 0; c < chunks; ++c) {
      const size_t count = std::min(chunk, n - c * chunk);
      sizes[c] = codec->encode(data + c * chunk, count, payload.data() + at, payload.size() - at);
      offsets[c] = at;
      at += sizes[c];
    }
    double encoded = MPI_Wtime();
    for (size_t c = 0; c < chunks; ++c) {
      const size_t count = std::min(chunk, n - c * chunk);
      codec->decode(payload.data() + offsets[c], sizes[c], decoded.data() + c * chunk, count);
    }
    double local[2] = {encoded - start, MPI_Wtime() - encoded}, slowest[2] = {0, 0};
    MPI_Allreduce(local, slowest, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (round < options.warmup) continue;
    encode_samples.push_back(slowest[0]);
    decode_samples.push_back(slowest[1]);
    spent += slowest[0] + slowest[1];
    if (int(encode_samples.size()) >= options.min_iterations && spent > options.point_seconds)
      break;
  }
  double bytes[2] = {double(n * sizeof(float)), 0}, total[2] = {0, 0};
  for (size_t s : sizes) bytes[1] += double(s);
  MPI_Allreduce(bytes, total, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return {median(encode_samples), median(decode_samples), total[1] > 0 ? total[0] / total[1] : 1};
}

void run_variant(Variant& variant, CollectiveOpBuffers& buffers) {
  if (variant.plain())
    buffers.run_plain(variant.plain_comm);
  else
    buffers.run_communicator(*variant.communicator);
}

struct PointTimes {
  std::vector<std::vector<double>> samples;       // per variant, slowest rank per round
  std::vector<comm::OpCounters> counters_before;  // per variant, after the warm-up
};

std::vector<comm::OpCounters> snapshot(const std::vector<Variant>& variants, comm::Op op) {
  std::vector<comm::OpCounters> counters;
  for (const auto& v : variants)
    counters.push_back(v.plain() ? comm::OpCounters{} : v.communicator->stats().at(op));
  return counters;
}

PointTimes time_point(std::vector<Variant>& variants, CollectiveOpBuffers& buffers,
                      const CollectiveBenchOptions& options) {
  const size_t count = variants.size();
  std::vector<double> local(count), slowest(count);
  PointTimes times;
  times.samples.resize(count);
  double spent = 0;
  for (int round = 0; round < options.warmup + options.iterations; ++round) {
    if (round == options.warmup) times.counters_before = snapshot(variants, buffers.op());
    for (size_t v = 0; v < count; ++v) {
      buffers.reset();
      MPI_Barrier(MPI_COMM_WORLD);
      const double start = MPI_Wtime();
      run_variant(variants[v], buffers);
      local[v] = MPI_Wtime() - start;
    }
    MPI_Allreduce(local.data(), slowest.data(), int(count), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (round < options.warmup) continue;
    for (size_t v = 0; v < count; ++v) {
      times.samples[v].push_back(slowest[v]);
      spent += slowest[v];
    }
    if (int(times.samples[0].size()) >= options.min_iterations && spent > options.point_seconds)
      break;
  }
  return times;
}

// ||result - reference|| / ||reference|| over all ranks' results.
double relative_error(const std::vector<float>& result, const std::vector<float>& reference) {
  double local[2] = {0, 0}, global[2] = {0, 0};
  for (size_t i = 0; i < result.size() && i < reference.size(); ++i) {
    const double diff = double(result[i]) - double(reference[i]);
    local[0] += diff * diff;
    local[1] += double(reference[i]) * double(reference[i]);
  }
  MPI_Allreduce(local, global, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  if (global[0] == 0) return 0;
  return global[1] > 0 ? std::sqrt(global[0] / global[1]) : INFINITY;
}

// Runs one (op, size) point and returns its rows, in variant order.
std::vector<CollectiveRow> run_point(std::vector<Variant>& variants, comm::Op op, size_t bytes,
                                     const std::vector<float>& data,
                                     const std::vector<CodecFigures>& figures,
                                     const CollectiveBenchOptions& options,
                                     const std::string& data_label) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CollectiveOpBuffers buffers(op, bytes, rank, size, data);

  PointTimes times = time_point(variants, buffers, options);
  const std::vector<comm::OpCounters>& before = times.counters_before;

  // Wire bytes, compressed calls and calls counted by each Communicator
  // during the timed rounds only, summed over ranks.
  const size_t count = variants.size();
  std::vector<double> local(3 * count, 0), global(3 * count, 0);
  for (size_t v = 0; v < count; ++v) {
    if (variants[v].plain()) continue;
    const comm::OpCounters& after = variants[v].communicator->stats().at(op);
    local[2 * v] = double(after.wire_bytes - before[v].wire_bytes);
    local[2 * v + 1] = double(after.compressed_calls - before[v].compressed_calls);
    local[2 * count + v] = double(after.calls - before[v].calls);
  }
  MPI_Allreduce(local.data(), global.data(), int(local.size()), MPI_DOUBLE, MPI_SUM,
                MPI_COMM_WORLD);

  // The plain MPI result is the reference every other variant is held to.
  buffers.reset();
  run_variant(variants[0], buffers);
  const std::vector<float> reference = buffers.result();

  const int rounds = int(times.samples[0].size());
  const int senders = op == comm::Op::kSendRecv ? 1 : size;
  const double mpi_median = median(times.samples[0]);
  std::vector<CollectiveRow> rows;
  for (size_t v = 0; v < count; ++v) {
    CollectiveRow row;
    row.op = comm::to_string(op);
    row.bytes = bytes;
    row.ranks = size;
    row.variant = variants[v].label;
    row.iterations = rounds;
    row.median_seconds = median(times.samples[v]);
    row.min_seconds = *std::min_element(times.samples[v].begin(), times.samples[v].end());
    row.speedup = row.median_seconds > 0 ? mpi_median / row.median_seconds : 0;
    row.data = data_label;
    row.link_bits_per_second = options.link_bits_per_second;
    if (v > 0) {
      buffers.reset();
      run_variant(variants[v], buffers);
      row.rel_error = relative_error(buffers.result(), reference);
      row.wire_bytes_per_rank = global[2 * v] / double(rounds) / double(senders);
      row.compressed = global[2 * count + v] > 0 ? global[2 * v + 1] / global[2 * count + v] : 0;
    }
    // A row the policy sent raw (below --min-bytes) is bounded like a raw row.
    if (variants[v].codec && row.compressed > 0) {
      const CodecFigures& f = figures[v - 2];
      row.ratio = f.ratio;
      row.encode_seconds = f.encode_seconds;
      row.decode_seconds = f.decode_seconds;
      row.codec_seconds = codec_bound_seconds(op, size, f.encode_seconds, f.decode_seconds);
    }
    row.wire_bound_seconds =
        wire_bound_seconds(op, bytes, size, row.ratio, options.link_bits_per_second);
    const double bound = std::max(row.wire_bound_seconds, row.codec_seconds);
    row.bound_ratio = bound > 0 ? row.median_seconds / bound : 0;
    rows.push_back(row);
  }
  // The plain call moves what the raw Communicator path moves.
  rows[0].wire_bytes_per_rank = rows[1].wire_bytes_per_rank;
  return rows;
}

void run(const CollectiveBenchOptions& options, int argc, char** argv) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const bool speak = rank == 0;
  CollectiveBenchOptions effective = options;
  effective.codecs = usable_codecs(options, speak);

  const size_t max_bytes = *std::max_element(options.sizes.begin(), options.sizes.end());
  std::string data_label;
  const std::vector<float> data = make_rank_data(options, max_bytes, rank, size, data_label);
  std::vector<Variant> variants = make_variants(effective);

  std::unique_ptr<CollectiveTable> table;
  if (speak) {
    std::printf("# cmpi-bench collective\n# command: %s\n", command_line(argc, argv).c_str());
    for (const auto& line : describe_machine()) std::printf("# %s\n", line.c_str());
    char rate[64] = "not given (no wire bound)";
    if (options.link_bits_per_second > 0)
      std::snprintf(rate, sizeof rate, "%g Mbit/s", options.link_bits_per_second / 1e6);
    std::printf("# ranks: %d, data: %s, chunk: %s, codec min_bytes: %s, link rate: %s\n", size,
                data_label.c_str(), format_byte_size(options.chunk_bytes).c_str(),
                options.codec_min_bytes < 0
                    ? "policy default"
                    : format_byte_size(size_t(options.codec_min_bytes)).c_str(),
                rate);
    table = std::make_unique<CollectiveTable>(options.csv_path, stdout);
  }

  for (size_t bytes : options.sizes) {
    std::vector<CodecFigures> figures;
    for (const auto& spec : effective.codecs)
      figures.push_back(measure_codec(spec, data.data(), bytes / sizeof(float), effective));
    for (comm::Op op : options.ops) {
      if (op == comm::Op::kSendRecv && size < 2) {
        if (speak) std::printf("\n# p2p skipped: needs at least 2 ranks\n");
        continue;
      }
      auto rows = run_point(variants, op, bytes, data, figures, effective, data_label);
      if (!speak) continue;
      table->begin_point(comm::to_string(op), bytes, size);
      for (const auto& row : rows) table->add(row);
    }
  }
  if (speak)
    std::printf("\n# done; load average at the end: %.2f%s%s\n", load_average(),
                options.csv_path.empty() ? "" : "; CSV: ", options.csv_path.c_str());
  for (auto& v : variants)
    if (v.plain_comm != MPI_COMM_NULL) MPI_Comm_free(&v.plain_comm);
}

}  // namespace

int run_collective_bench(int argc, char** argv) {
  comm::MpiSession session(&argc, &argv);
  CollectiveBenchOptions options;
  try {
    options = parse_collective_bench_options(argc, argv);
  } catch (const std::exception& e) {
    // Every rank parsed the same arguments and failed alike: no one waits.
    if (session.world_rank() == 0)
      std::fprintf(stderr, "cmpi-bench collective: %s\n%s", e.what(),
                   collective_bench_usage().c_str());
    return 2;
  }
  if (options.help) {
    if (session.world_rank() == 0) std::printf("%s", collective_bench_usage().c_str());
    return 0;
  }
  try {
    run(options, argc, argv);
  } catch (const std::exception& e) {
    comm::abort_job("cmpi-bench collective", e.what());
  }
  return 0;
}

}  // namespace cmpi::bench
