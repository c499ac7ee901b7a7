// Timing and error measurement of one BenchSubject on one dataset.
//
// Per thread count (1, then T): one untimed warm-up, then `repeats` timed
// encodes followed by `repeats` timed decodes; the median time of each is
// kept. Ratio and error come from the single-thread run: the decoded output is
// compared with the input (relative RMSE ||x - x'|| / ||x||, max |x - x'|), and
// a lossless subject must give the input back bit for bit.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "bench/bench_subject.h"

namespace cmpi::bench {

struct MeasureOptions {
  int repeats = 5;
  int threads = 1;  // the all-threads run; 1 skips it
  // Time the single-thread run by the calling thread's CPU time instead of
  // the wall clock: on a machine shared with other work, time spent
  // descheduled then does not count against the codec. (Single-thread
  // OpenMP regions and Blosc with one thread run on the calling thread.)
  bool cpu_time_1t = false;
};

struct ErrorStats {
  double rel_rmse = 0;       // ||x - x'||_2 / ||x||_2 over finite x; 0 when x' == x
  double max_abs_error = 0;  // max |x - x'|; +inf where a value became NaN/Inf or vice versa
  bool bit_exact = true;
  size_t first_mismatch = 0;  // index of the first differing bit pattern, if !bit_exact
};

struct Measurement {
  size_t elements = 0;
  size_t encoded_bytes = 0;
  double encode_seconds_1t = 0;
  double decode_seconds_1t = 0;
  double encode_seconds_mt = 0;  // equal to the 1t figures when threads == 1
  double decode_seconds_mt = 0;
  ErrorStats error;
};

// Throws whatever the subject throws, and std::runtime_error if a lossless
// subject does not round-trip bit-exactly or the all-threads encode gives a
// different size for a lossless subject.
Measurement measure(BenchSubject& subject, const std::vector<float>& input,
                    const MeasureOptions& options, std::vector<float>& scratch);

// Input bytes over encoded bytes (0 if nothing was encoded).
double compression_ratio(const Measurement& m);
// GB/s (10^9 bytes per second) of input floats for a time in seconds.
double throughput_gbps(const Measurement& m, double seconds);

ErrorStats compare(const float* original, const float* decoded, size_t n);

// Seconds on a monotonic clock: the wall clock, or the calling thread's CPU time.
double now_seconds(bool thread_cpu_time);

// Median of the samples (mean of the middle two for an even count); 0 if empty.
double median(std::vector<double> samples);

}  // namespace cmpi::bench
