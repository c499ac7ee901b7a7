// How the codec benchmark runs: parse options, list the datasets (synthetic
// always; captured files if present; --data files), list the subjects (each
// registered codec at each setting of codec_settings.cpp, then the lossless
// references), and for each dataset measure every subject (measurement.h),
// printing a row as soon as it is measured. A setting that cannot be built or
// fails to round-trip is reported and counted, and the run goes on.
#include "bench/codec_bench.h"

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <stdexcept>

#include "bench/bench_dataset.h"
#include "bench/codec_settings.h"
#include "bench/codec_subject.h"
#include "bench/lossless_references.h"
#include "bench/machine_info.h"
#include "bench/measurement.h"
#include "bench/result_table.h"
#include "bench/target_report.h"
#include "compress/codec_registry.h"

#ifndef CMPI_BENCH_DATA_DIR
#define CMPI_BENCH_DATA_DIR "bench/data"
#endif

namespace cmpi::bench {
namespace {

constexpr size_t kDefaultSize = size_t(4) << 20;  // 16 MiB: a typical gradient bucket
constexpr size_t kQuickSize = size_t(256) << 10;
constexpr int kDefaultRepeats = 5;
constexpr int kQuickRepeats = 1;

struct DatasetSource {
  std::string name;
  std::string path;  // empty: synthetic
};

struct CodecEntry {
  std::string name;
  std::vector<CodecSetting> settings;
};

bool contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    if (comma > start) out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

int parse_positive_int(const std::string& option, const std::string& text) {
  size_t used = 0;
  long value = 0;
  try {
    value = std::stol(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || value < 1 || value > 1000000)
    throw std::invalid_argument(option + ": expected a positive integer, got '" + text + "'");
  return int(value);
}

bool file_exists(const std::string& path) {
  return std::ifstream(path).good();
}

// Checks a data file before any work starts, so a bad file costs no run time.
void check_data_file(const std::string& option, const std::string& path) {
  try {
    f32_file_elements(path);
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(option + ": " + e.what());
  }
}

std::vector<DatasetSource> list_datasets(const CodecBenchOptions& options) {
  std::vector<DatasetSource> sources{{"gaussian", ""}};
  for (const char* name : {"gradients", "activations"}) {
    std::string path = options.data_dir + "/" + name + ".f32";
    if (file_exists(path)) {
      check_data_file("--data-dir", path);
      sources.push_back({name, path});
    } else if (options.datasets.empty() || contains(options.datasets, name)) {
      std::printf("# dataset %s: %s is missing (scripts/capture_bench_data.sh makes it)\n", name,
                  path.c_str());
    }
  }
  for (const auto& path : options.data_files) {
    check_data_file("--data", path);
    sources.push_back({dataset_name_from_path(path), path});
  }
  if (options.datasets.empty()) return sources;
  std::vector<DatasetSource> kept;
  for (const auto& wanted : options.datasets) {
    auto it = std::find_if(sources.begin(), sources.end(),
                           [&](const DatasetSource& s) { return s.name == wanted; });
    if (it == sources.end()) {
      std::string known;
      for (const auto& s : sources) known += (known.empty() ? "" : ", ") + s.name;
      throw std::invalid_argument("--dataset '" + wanted +
                                  "': no such dataset (available: " + known + ")");
    }
    kept.push_back(*it);
  }
  return kept;
}

std::vector<CodecEntry> list_codecs(const CodecBenchOptions& options,
                                    const compress::CodecRegistry& registry) {
  std::vector<CodecEntry> entries;
  if (options.codecs.empty()) {
    for (const auto& name : registry.names())
      entries.push_back({name, settings_for(name, options.quick)});
    return entries;
  }
  for (const auto& wanted : options.codecs) {
    compress::CodecSpec spec = compress::CodecSpec::parse(wanted);
    if (!registry.contains(spec.name())) {
      std::string known;
      for (const auto& name : registry.names()) known += (known.empty() ? "" : ", ") + name;
      throw std::invalid_argument("--codec '" + wanted + "': no such codec (registered: " + known +
                                  "; lossless references are chosen with --references)");
    }
    if (wanted.find(':') != std::string::npos)
      entries.push_back({spec.name(), {CodecSetting{wanted, "", 0, true}}});
    else
      entries.push_back({wanted, settings_for(wanted, options.quick)});
  }
  return entries;
}

Dataset load(const DatasetSource& source, const CodecBenchOptions& options) {
  if (source.path.empty()) return make_gaussian_dataset(options.size, options.seed);
  return load_f32_dataset(source.name, source.path, options.size);
}

void print_dataset(const Dataset& data) {
  DatasetStats stats = compute_stats(data.values);
  std::printf("\n# dataset %s: %zu floats (%.1f MiB) from %s; rms %.4g, min %.4g, max %.4g",
              data.name.c_str(), data.values.size(), double(data.values.size()) * 4 / 1048576.0,
              data.source.c_str(), stats.rms, stats.min, stats.max);
  if (stats.nonfinite) std::printf(", %zu non-finite", stats.nonfinite);
  std::printf("\n");
}

struct RunState {
  std::vector<std::string> failures;
  std::vector<float> scratch;
};

void run_subject(BenchSubject& subject, const Dataset& data, bool reference,
                 const CodecBenchOptions& options, ResultTable& table, RunState& state) {
  ResultRow row;
  row.dataset = data.name;
  row.family = subject.family();
  row.spec = subject.label();
  row.lossless = subject.lossless();
  row.reference = reference;
  row.parallelism = options.threads > 1 ? subject.parallelism() : "none";
  row.threads = options.threads;
  row.clock_1t = options.cpu_clock ? "cpu" : "wall";
  try {
    row.measurement = measure(subject, data.values,
                              {options.repeats, options.threads, options.cpu_clock}, state.scratch);
  } catch (const std::exception& e) {
    state.failures.push_back(data.name + " / " + subject.label() + ": " + e.what());
    std::printf("%-11s %-36s FAILED: %s\n", data.name.c_str(), subject.label().c_str(), e.what());
    return;
  }
  table.add(row);
}

}  // namespace

size_t parse_count(const std::string& option, const std::string& text) {
  static const struct {
    const char* suffix;
    size_t scale;
  } kSuffixes[] = {{"Ki", size_t(1) << 10},
                   {"Mi", size_t(1) << 20},
                   {"Gi", size_t(1) << 30},
                   {"K", 1000},
                   {"M", 1000000},
                   {"G", 1000000000},
                   {"", 1}};
  for (const auto& s : kSuffixes) {
    const size_t len = std::char_traits<char>::length(s.suffix);
    if (text.size() <= len || text.compare(text.size() - len, len, s.suffix) != 0) continue;
    const std::string digits = text.substr(0, text.size() - len);
    if (digits.find_first_not_of("0123456789") != std::string::npos) break;
    unsigned long long value = 0;
    try {
      value = std::stoull(digits);
    } catch (const std::exception&) {
      break;
    }
    if (value == 0 || value > (size_t(1) << 34) / s.scale) break;
    return size_t(value) * s.scale;
  }
  throw std::invalid_argument(option +
                              ": expected a count such as 4096, 64Ki, 16Mi or 1M "
                              "(at most 16Gi), got '" +
                              text + "'");
}

std::string codec_bench_usage() {
  return "usage: cmpi-bench codec [options]\n"
         "  --quick            small data, one or two settings per codec, 1 repeat (smoke test)\n"
         "  --codec NAME|SPEC  only this codec (its settings table) or exactly this spec,\n"
         "                     e.g. zfp or zfp:mode=rate,rate=7; repeatable, comma-separated\n"
         "  --references LIST  lossless references to run: memcpy,zstd,lz4,blosc (default all)\n"
         "                     or none\n"
         "  --dataset NAME     only this dataset (gaussian, gradients, activations, a --data\n"
         "                     file's stem); repeatable\n"
         "  --data FILE.f32    also run on this float32 tensor file (a raw float32 file is\n"
         "                     read with a warning); repeatable\n"
         "  --data-dir DIR     where gradients.f32 and activations.f32 are (default " +
         std::string(CMPI_BENCH_DATA_DIR) +
         ")\n"
         "  --size N           synthetic floats, and at most N floats read from each file\n"
         "                     (default 4Mi, --quick 256Ki; suffixes Ki Mi Gi K M G)\n"
         "  --repeats R        timed runs per measurement after one warm-up; median is reported\n"
         "                     (default 5, --quick 1)\n"
         "  --threads T        threads for the all-threads columns (default: OpenMP's maximum)\n"
         "  --clock wall|cpu   what times the single-thread columns: the wall clock (default) or\n"
         "                     the thread's CPU time, which a busy machine disturbs less\n"
         "  --seed S           seed of the synthetic data (default 42)\n"
         "  --csv FILE         where to write the rows (default bench_codec.csv)\n";
}

CodecBenchOptions parse_codec_bench_args(int argc, char** argv) {
  CodecBenchOptions options;
  options.data_dir = CMPI_BENCH_DATA_DIR;
  bool size_given = false;
  bool repeats_given = false;
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
    } else if (arg == "--codec") {
      // A spec holds commas itself ("zfp:mode=rate,rate=8"): split only names.
      const std::string text = value();
      if (text.find(':') != std::string::npos)
        options.codecs.push_back(text);
      else
        for (auto& name : split_list(text)) options.codecs.push_back(name);
    } else if (arg == "--references") {
      for (auto& name : split_list(value())) options.references.push_back(name);
    } else if (arg == "--dataset") {
      for (auto& name : split_list(value())) options.datasets.push_back(name);
    } else if (arg == "--data") {
      options.data_files.push_back(value());
    } else if (arg == "--data-dir") {
      options.data_dir = value();
    } else if (arg == "--size") {
      options.size = parse_count(arg, value());
      size_given = true;
    } else if (arg == "--repeats") {
      options.repeats = parse_positive_int(arg, value());
      repeats_given = true;
    } else if (arg == "--threads") {
      options.threads = parse_positive_int(arg, value());
    } else if (arg == "--clock") {
      const std::string text = value();
      if (text != "wall" && text != "cpu")
        throw std::invalid_argument("--clock: expected wall or cpu, got '" + text + "'");
      options.cpu_clock = text == "cpu";
    } else if (arg == "--seed") {
      const std::string text = value();
      if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
        throw std::invalid_argument("--seed: expected a non-negative integer, got '" + text + "'");
      options.seed = std::stoull(text);
    } else if (arg == "--csv") {
      options.csv_path = value();
    } else {
      throw std::invalid_argument("unknown option '" + arg + "'");
    }
  }
  if (!size_given) options.size = options.quick ? kQuickSize : kDefaultSize;
  if (!repeats_given) options.repeats = options.quick ? kQuickRepeats : kDefaultRepeats;
  if (options.threads == 0) options.threads = std::max(1, omp_get_max_threads());
  if (options.references.size() > 1 && contains(options.references, "none"))
    throw std::invalid_argument("--references: 'none' cannot be combined with other names");
  return options;
}

int run_codec_bench(int argc, char** argv) {
  CodecBenchOptions options;
  try {
    options = parse_codec_bench_args(argc, argv);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "cmpi-bench codec: %s\n%s", e.what(), codec_bench_usage().c_str());
    return 2;
  }
  if (options.help) {
    std::printf("%s", codec_bench_usage().c_str());
    return 0;
  }

  const compress::CodecRegistry registry = compress::CodecRegistry::with_builtin_codecs();
  std::vector<CodecEntry> codecs;
  std::vector<DatasetSource> datasets;
  std::vector<std::unique_ptr<BenchSubject>> references;
  try {
    codecs = list_codecs(options, registry);
    if (!contains(options.references, "none"))
      references = make_lossless_references(options.references, options.threads);
    std::printf("# cmpi-bench codec\n# command: %s\n", command_line(argc, argv).c_str());
    for (const auto& line : describe_machine()) std::printf("# %s\n", line.c_str());
    std::printf("# libraries: %s\n", lossless_library_versions().c_str());
    std::printf(
        "# all-threads columns (nT) use %d threads; %d timed repeats after 1 warm-up, "
        "median; GB/s = 10^9 bytes of input floats per second\n",
        options.threads, options.repeats);
    std::printf("# single-thread columns (1T) timed by %s; all-thread columns by the wall clock\n",
                options.cpu_clock ? "the thread's CPU time" : "the wall clock");
    datasets = list_datasets(options);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "cmpi-bench codec: %s\n", e.what());
    return 2;
  }
  std::string codec_names;
  for (const auto& c : codecs) codec_names += (codec_names.empty() ? "" : ", ") + c.name;
  std::printf("# codecs: %s\n", codec_names.c_str());

  ResultTable table(options.csv_path, stdout);
  RunState state;
  for (const auto& source : datasets) {
    Dataset data = load(source, options);
    print_dataset(data);
    table.print_header();
    const double rms = compute_stats(data.values).rms;
    for (const auto& codec : codecs) {
      for (const auto& setting : codec.settings) {
        std::unique_ptr<CodecSubject> subject;
        std::string spec_text = setting.spec;
        try {
          compress::CodecSpec spec = resolve(setting, rms);
          spec_text = compact_spec(spec);
          subject = std::make_unique<CodecSubject>(registry, spec, options.threads);
        } catch (const std::exception& e) {
          state.failures.push_back(data.name + " / " + spec_text + ": " + e.what());
          std::printf("%-11s %-36s FAILED: %s\n", data.name.c_str(), spec_text.c_str(), e.what());
          continue;
        }
        run_subject(*subject, data, false, options, table, state);
      }
    }
    for (auto& reference : references) run_subject(*reference, data, true, options, table, state);
  }

  print_target_report(check_targets(table.rows()), stdout);
  std::printf("\n# %zu rows written to %s; load average (1 min) at end: %.2f\n",
              table.rows().size(), options.csv_path.c_str(), load_average());
  if (state.failures.empty()) return 0;
  std::fprintf(stderr, "cmpi-bench codec: %zu setting(s) failed:\n", state.failures.size());
  for (const auto& failure : state.failures) std::fprintf(stderr, "  %s\n", failure.c_str());
  return 1;
}

}  // namespace cmpi::bench
