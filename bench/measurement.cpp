#include "bench/measurement.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <limits>
#include <stdexcept>

namespace cmpi::bench {
namespace {

struct RunTimes {
  size_t encoded_bytes = 0;
  double encode_seconds = 0;
  double decode_seconds = 0;
};

RunTimes timed_run(BenchSubject& subject, const std::vector<float>& input, int threads, int repeats,
                   bool cpu_time, std::vector<float>& out) {
  const size_t n = input.size();
  RunTimes run;
  run.encoded_bytes = subject.encode(input.data(), n, threads);  // warm-up
  std::vector<double> samples;
  for (int r = 0; r < repeats; ++r) {
    const double start = now_seconds(cpu_time);
    size_t bytes = subject.encode(input.data(), n, threads);
    samples.push_back(now_seconds(cpu_time) - start);
    // Stochastic codecs may vary a little; the lossless ones must not.
    if (bytes != run.encoded_bytes && subject.lossless())
      throw std::runtime_error(subject.label() + ": encoded size changed between runs (" +
                               std::to_string(run.encoded_bytes) + " then " +
                               std::to_string(bytes) + ")");
    run.encoded_bytes = bytes;
  }
  run.encode_seconds = median(samples);

  // A decoder that skips elements leaves NaN behind, which compare() reports.
  std::fill(out.begin(), out.end(), std::numeric_limits<float>::quiet_NaN());
  subject.decode(out.data(), n, threads);  // warm-up
  samples.clear();
  for (int r = 0; r < repeats; ++r) {
    const double start = now_seconds(cpu_time);
    subject.decode(out.data(), n, threads);
    samples.push_back(now_seconds(cpu_time) - start);
  }
  run.decode_seconds = median(samples);
  return run;
}

}  // namespace

double now_seconds(bool thread_cpu_time) {
  if (thread_cpu_time) {
    timespec now{};
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) == 0)
      return double(now.tv_sec) + 1e-9 * double(now.tv_nsec);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> samples) {
  if (samples.empty()) return 0;
  const size_t mid = samples.size() / 2;
  std::nth_element(samples.begin(), samples.begin() + long(mid), samples.end());
  if (samples.size() % 2 == 1) return samples[mid];
  const double upper = samples[mid];
  const double lower = *std::max_element(samples.begin(), samples.begin() + long(mid));
  return 0.5 * (lower + upper);
}

double compression_ratio(const Measurement& m) {
  return m.encoded_bytes ? double(m.elements) * 4.0 / double(m.encoded_bytes) : 0.0;
}

double throughput_gbps(const Measurement& m, double seconds) {
  return seconds > 0 ? double(m.elements) * 4.0 / seconds / 1e9 : 0.0;
}

ErrorStats compare(const float* original, const float* decoded, size_t n) {
  ErrorStats stats;
  double error_squares = 0;
  double signal_squares = 0;
  for (size_t i = 0; i < n; ++i) {
    const float x = original[i];
    const float y = decoded[i];
    if (stats.bit_exact && std::memcmp(&x, &y, sizeof(float)) != 0) {
      stats.bit_exact = false;
      stats.first_mismatch = i;
    }
    if (!std::isfinite(x) || !std::isfinite(y)) {
      // Non-finite values carry no magnitude: the same class (NaN/NaN,
      // +Inf/+Inf) is no error, anything else is an unbounded one.
      const bool same = (std::isnan(x) && std::isnan(y)) || x == y;
      if (!same) stats.max_abs_error = std::numeric_limits<double>::infinity();
      if (std::isfinite(x)) signal_squares += double(x) * x;
      if (!same) error_squares = std::numeric_limits<double>::infinity();
      continue;
    }
    const double diff = double(x) - double(y);
    error_squares += diff * diff;
    signal_squares += double(x) * x;
    stats.max_abs_error = std::max(stats.max_abs_error, std::fabs(diff));
  }
  if (error_squares == 0)
    stats.rel_rmse = 0;
  else if (signal_squares == 0)
    stats.rel_rmse = std::numeric_limits<double>::infinity();
  else
    stats.rel_rmse = std::sqrt(error_squares / signal_squares);
  return stats;
}

Measurement measure(BenchSubject& subject, const std::vector<float>& input,
                    const MeasureOptions& options, std::vector<float>& scratch) {
  const int repeats = std::max(1, options.repeats);
  scratch.resize(input.size());
  Measurement m;
  m.elements = input.size();

  RunTimes single = timed_run(subject, input, 1, repeats, options.cpu_time_1t, scratch);
  m.encoded_bytes = single.encoded_bytes;
  m.encode_seconds_1t = m.encode_seconds_mt = single.encode_seconds;
  m.decode_seconds_1t = m.decode_seconds_mt = single.decode_seconds;
  m.error = compare(input.data(), scratch.data(), input.size());
  if (subject.lossless() && !m.error.bit_exact)
    throw std::runtime_error(subject.label() + " claims to be lossless but element " +
                             std::to_string(m.error.first_mismatch) +
                             " did not round-trip bit-exactly");

  if (options.threads > 1) {
    RunTimes multi = timed_run(subject, input, options.threads, repeats, false, scratch);
    m.encode_seconds_mt = multi.encode_seconds;
    m.decode_seconds_mt = multi.decode_seconds;
    if (subject.lossless() && std::memcmp(scratch.data(), input.data(), input.size() * 4) != 0)
      throw std::runtime_error(subject.label() + ": the " + std::to_string(options.threads) +
                               "-thread run did not round-trip bit-exactly");
  }
  return m;
}

}  // namespace cmpi::bench
