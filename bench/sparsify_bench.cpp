// Each subject turns the dataset into a sparse payload of (about) the target
// density: the codecs through Codec::encode, the nth_element baseline by
// building the magnitude keys, selecting the k-th largest with
// std::nth_element, gathering the entries above it in position order and
// writing the same sparse body (compress/sparse_body.h), so every subject
// does the whole job. Times are per repeat, subjects in the same order each
// repeat; the median is reported.
#include "bench/sparsify_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/bench_dataset.h"
#include "bench/codec_bench.h"
#include "bench/machine_info.h"
#include "compress/codec_registry.h"
#include "compress/sidco_codec.h"
#include "compress/sparse_body.h"
#include "compress/sparse_codec.h"

#ifndef CMPI_BENCH_DATA_DIR
#define CMPI_BENCH_DATA_DIR "bench/data"
#endif

namespace cmpi::bench {
namespace {

struct Options {
  size_t size = size_t(4) << 20;  // floats: 16 MiB
  double density = 0.01;
  int repeats = 11;
  std::string data_dir = CMPI_BENCH_DATA_DIR;
  uint64_t seed = 42;
};

std::string usage() {
  return "usage: cmpi-bench sparsify [--size N] [--density D] [--repeats R] [--data-dir DIR]\n"
         "  --size N      floats per buffer (default 4Mi = 16 MiB; suffixes Ki, Mi, K, M)\n"
         "  --density D   target fraction of entries kept, in (0, 1] (default 0.01)\n"
         "  --repeats R   timed runs per subject, interleaved (default 11)\n"
         "  --data-dir D  where gradients.f32 lives (default bench/data)\n";
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + ": missing value");
      return argv[++i];
    };
    if (arg == "--size") {
      o.size = parse_count(arg, value());
    } else if (arg == "--density") {
      const std::string text = value();
      o.density = std::atof(text.c_str());
      if (!(o.density > 0 && o.density <= 1))
        throw std::invalid_argument("--density: expected a number in (0, 1], got '" + text + "'");
    } else if (arg == "--repeats") {
      o.repeats = int(parse_count(arg, value()));
    } else if (arg == "--data-dir") {
      o.data_dir = value();
    } else {
      throw std::invalid_argument("unknown option '" + arg + "'\n" + usage());
    }
  }
  return o;
}

std::vector<float> laplace(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<float> magnitude(1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = (rng() & 1 ? 1.f : -1.f) * magnitude(rng);
  return v;
}

// The captured file repeated until n floats (its distribution is what
// matters here, not its length).
std::vector<float> tiled(const std::vector<float>& source, size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = source[i % source.size()];
  return v;
}

struct Subject {
  std::string name;
  // Encodes the input; returns the achieved density.
  std::function<double(const std::vector<float>&)> run;
  std::vector<double> seconds;
};

// Exact top-k by std::nth_element over all n keys, written as a sparse body.
class NthElementTopK {
 public:
  explicit NthElementTopK(double density) : density_(density) {}
  double run(const std::vector<float>& x) {
    const size_t n = x.size(), k = compress::kept_count_for_ratio(density_, n);
    keys_.resize(n);
    for (size_t i = 0; i < n; ++i) keys_[i] = compress::magnitude_key(x[i]);
    std::nth_element(keys_.begin(), keys_.begin() + std::ptrdiff_t(k - 1), keys_.end(),
                     std::greater<uint32_t>());
    const uint32_t kth = keys_[k - 1];
    index_.clear();
    value_.clear();
    for (size_t i = 0; i < n && index_.size() < k; ++i)
      if (compress::magnitude_key(x[i]) >= kth) {
        index_.push_back(i);
        value_.push_back(x[i]);
      }
    body_.resize(compress::max_sparse_body_bytes(k, n));
    compress::write_sparse_body(index_.data(), value_.data(), index_.size(), n, body_.data());
    return double(index_.size()) / double(n);
  }

 private:
  double density_;
  std::vector<uint32_t> keys_;
  std::vector<uint64_t> index_;
  std::vector<float> value_;
  std::vector<uint8_t> body_;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int run_sparsify_bench(int argc, char** argv) {
  Options o;
  try {
    for (int i = 1; i < argc; ++i)
      if (std::string(argv[i]) == "--help") {
        std::printf("%s", usage().c_str());
        return 0;
      }
    o = parse(argc, argv);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "cmpi-bench sparsify: %s\n", e.what());
    return 2;
  }
  std::printf("# cmpi-bench sparsify: %s\n", command_line(argc, argv).c_str());
  for (const auto& line : describe_machine()) std::printf("# %s\n", line.c_str());
  std::printf("# %zu floats (%.1f MiB), target density %g, %d interleaved repeats, 1 thread\n",
              o.size, double(o.size) * 4 / (1 << 20), o.density, o.repeats);

  struct Data {
    std::string name;
    std::vector<float> values;
  };
  std::vector<Data> datasets;
  datasets.push_back({"laplace", laplace(o.size, o.seed)});
  datasets.push_back({"normal", make_gaussian_dataset(o.size, o.seed).values});
  const std::string gradients = o.data_dir + "/gradients.f32";
  try {
    datasets.push_back({"gradients (tiled)",
                        tiled(load_f32_dataset("gradients", gradients, o.size).values, o.size)});
  } catch (const std::exception& e) {
    std::printf("# no captured gradients: %s\n", e.what());
  }

  const std::string d = std::to_string(o.density);
  const std::vector<std::string> specs = {
      "topk:ratio=" + d,
      "sidco:density=" + d + ",stages=1,fit=exponential",
      "sidco:density=" + d + ",stages=2,fit=gpareto",
      "sidco:density=" + d + ",stages=3,fit=gpareto",
      "sidco:density=" + d + ",stages=2,fit=gamma",
      "sidco:density=" + d + ",stages=2,fit=gpareto,sample=0",
  };
  std::printf("\n%-18s %-48s %10s %10s %9s %12s %12s\n", "dataset", "subject", "median_ms",
              "density", "achieved/target", "vs_nth_elem", "vs_topk");
  for (const Data& data : datasets) {
    std::vector<Subject> subjects;
    auto nth = std::make_shared<NthElementTopK>(o.density);
    subjects.push_back(
        {"std::nth_element top-k", [nth](const std::vector<float>& x) { return nth->run(x); }, {}});
    std::vector<uint8_t> payload;
    for (const std::string& text : specs) {
      std::shared_ptr<compress::Codec> codec =
          compress::make_codec(compress::CodecSpec::parse(text));
      auto out = std::make_shared<std::vector<uint8_t>>(codec->max_encoded_bytes(o.size));
      subjects.push_back({text,
                          [codec, out](const std::vector<float>& x) {
                            const size_t bytes =
                                codec->encode(x.data(), x.size(), out->data(), out->size());
                            if (auto* sidco = dynamic_cast<compress::SidcoCodec*>(codec.get()))
                              return sidco->last_density();
                            const auto info = compress::sparse_body_info(
                                out->data() + compress::kPayloadHeaderBytes,
                                bytes - compress::kPayloadHeaderBytes);
                            return double(info.kept) / double(x.size());
                          },
                          {}});
    }
    std::vector<double> achieved(subjects.size());
    for (auto& s : subjects) s.run(data.values);  // warm-up: allocations, page faults
    for (int r = 0; r < o.repeats; ++r)
      for (size_t i = 0; i < subjects.size(); ++i) {
        const double start = now();
        achieved[i] = subjects[i].run(data.values);
        subjects[i].seconds.push_back(now() - start);
      }
    const double nth_s = median(subjects[0].seconds), topk_s = median(subjects[1].seconds);
    for (size_t i = 0; i < subjects.size(); ++i) {
      const double t = median(subjects[i].seconds);
      std::printf("%-18s %-48s %10.3f %10.5f %15.3f %11.1fx %11.1fx\n", data.name.c_str(),
                  subjects[i].name.c_str(), t * 1e3, achieved[i], achieved[i] / o.density,
                  nth_s / t, topk_s / t);
    }
  }
  std::printf("\n# done; load average at the end: %.2f\n", load_average());
  return 0;
}

}  // namespace cmpi::bench
