// Blocks of kBlock values are summed with kLanes float accumulators; a block
// whose float result is not finite is either non-finite input (refused) or
// an overflow of x^2 or of the sum for huge finite values, and a sum of
// squares below 1e-30 may have lost tiny values to underflow: both are
// redone in double. Max |x| is an integer max over the float bits without the sign,
// where NaN and infinity show up as keys >= the all-ones exponent.
#include "compress/bucket_stats.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "compress/nonfinite.h"

namespace cmpi::compress {
namespace {

constexpr size_t kBlock = 256;
constexpr size_t kLanes = 8;
constexpr float kSmallestTrusted = 1e-30f;

template <bool kSquare>
double block_sum(const float* x, size_t len) {
  float acc[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= len; i += kLanes)
    for (size_t l = 0; l < kLanes; ++l)
      acc[l] += kSquare ? x[i + l] * x[i + l] : std::fabs(x[i + l]);
  float total = 0;
  for (size_t l = 0; l < kLanes; ++l) total += acc[l];
  for (; i < len; ++i) total += kSquare ? x[i] * x[i] : std::fabs(x[i]);
  // Squares of tiny values underflow in float (|x| < 1e-19); redo such
  // blocks, like overflowing ones, in double.
  if (std::isfinite(total) && (!kSquare || total >= kSmallestTrusted)) return total;
  double exact[4] = {};
  size_t j = 0;
  for (; j + 4 <= len; j += 4)
    for (size_t l = 0; l < 4; ++l)
      exact[l] += kSquare ? double(x[j + l]) * x[j + l] : std::fabs(double(x[j + l]));
  for (; j < len; ++j) exact[0] += kSquare ? double(x[j]) * x[j] : std::fabs(double(x[j]));
  return (exact[0] + exact[1]) + (exact[2] + exact[3]);  // non-finite only for non-finite input
}

uint32_t max_magnitude_key(const float* x, size_t len) {
  uint32_t best = 0;
  for (size_t i = 0; i < len; ++i) {
    uint32_t bits;
    std::memcpy(&bits, x + i, 4);
    best = std::max(best, bits & 0x7fffffffu);
  }
  return best;
}

[[noreturn]] void overflow(const CodecSpec& spec, size_t bucket_index) {
  throw std::invalid_argument("codec " + spec.to_string() + ": the scale of bucket " +
                              std::to_string(bucket_index) + " overflows float");
}

}  // namespace

void compute_bucket_stats(const CodecSpec& spec, BucketStat stat, const float* x, size_t n,
                          size_t bucket, float* out) {
  const size_t span = bucket_span(n, bucket);
  const size_t buckets = bucket_count(n, bucket);
  for (size_t b = 0; b < buckets; ++b) {
    const float* v = x + b * span;
    const size_t len = std::min(span, n - b * span);
    if (stat == BucketStat::kMaxAbs) {
      const uint32_t key = max_magnitude_key(v, len);
      if (key >= 0x7f800000u) require_finite(spec, x, n);
      std::memcpy(&out[b], &key, 4);
      continue;
    }
    double sum = 0;
    for (size_t start = 0; start < len; start += kBlock) {
      const size_t block = std::min(kBlock, len - start);
      sum += stat == BucketStat::kL2Norm ? block_sum<true>(v + start, block)
                                         : block_sum<false>(v + start, block);
    }
    if (!std::isfinite(sum)) require_finite(spec, x, n);
    const double value = stat == BucketStat::kL2Norm ? std::sqrt(sum) : sum / double(len);
    if (value > FLT_MAX) overflow(spec, b);
    out[b] = float(value);
  }
}

size_t bucket_param(const CodecSpec& spec) {
  const int64_t bucket = spec.get_int("bucket", 512);
  if (bucket < 0 || bucket >= (int64_t{1} << 31))
    throw CodecError("codec '" + spec.name() + "': parameter 'bucket' must be in [0, 2^31), got " +
                     std::to_string(bucket) + " (0 = one bucket for the whole array)");
  return size_t(bucket);
}

}  // namespace cmpi::compress
