// Blocks of kBlock values are summed in float by the eight-lane kernels of
// quantize_kernels; a block whose float result is not finite is either
// non-finite input (refused) or an overflow of x^2 or of the sum for huge
// finite values, and a sum of squares below 1e-30 may have lost tiny values
// to underflow: both are redone in double (an all-zero block is recognised
// first, so it stays fast). Max |x| is an integer max over the float bits
// without the sign, where NaN and infinity show up as keys >= the all-ones
// exponent.
#include "compress/bucket_stats.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "compress/nonfinite.h"
#include "compress/quantize_kernels.h"

namespace cmpi::compress {
namespace {

constexpr size_t kBlock = 256;
constexpr float kSmallestTrusted = 1e-30f;

template <bool kSquare>
double block_sum(const float* x, size_t len) {
  const float total = kSquare ? kernels::sum_squares(x, len) : kernels::sum_abs(x, len);
  // Squares of tiny values underflow in float (|x| < 1e-19); redo such
  // blocks, like overflowing ones, in double.
  if (std::isfinite(total) && (!kSquare || total >= kSmallestTrusted)) return total;
  if (total == 0 && kernels::max_magnitude_key(x, len) == 0) return 0;
  double exact[4] = {};
  size_t j = 0;
  for (; j + 4 <= len; j += 4)
    for (size_t l = 0; l < 4; ++l)
      exact[l] += kSquare ? double(x[j + l]) * x[j + l] : std::fabs(double(x[j + l]));
  for (; j < len; ++j) exact[0] += kSquare ? double(x[j]) * x[j] : std::fabs(double(x[j]));
  return (exact[0] + exact[1]) + (exact[2] + exact[3]);  // non-finite only for non-finite input
}

[[noreturn]] void overflow(const CodecSpec& spec, size_t bucket_index) {
  throw std::invalid_argument("codec " + spec.to_string() + ": the scale of bucket " +
                              std::to_string(bucket_index) + " overflows float");
}

}  // namespace

float bucket_stat(const CodecSpec& spec, BucketStat stat, const float* x, size_t n, size_t bucket,
                  size_t index) {
  const size_t span = bucket_span(n, bucket);
  const float* v = x + index * span;
  const size_t len = std::min(span, n - index * span);
  if (stat == BucketStat::kMaxAbs) {
    const uint32_t key = kernels::max_magnitude_key(v, len);
    if (key >= 0x7f800000u) require_finite(spec, x, n);
    float value;
    std::memcpy(&value, &key, 4);
    return value;
  }
  double sum = 0;
  for (size_t start = 0; start < len; start += kBlock) {
    const size_t block = std::min(kBlock, len - start);
    sum += stat == BucketStat::kL2Norm ? block_sum<true>(v + start, block)
                                       : block_sum<false>(v + start, block);
  }
  if (!std::isfinite(sum)) require_finite(spec, x, n);
  const double value = stat == BucketStat::kL2Norm ? std::sqrt(sum) : sum / double(len);
  if (value > FLT_MAX) overflow(spec, index);
  return float(value);
}

void compute_bucket_stats(const CodecSpec& spec, BucketStat stat, const float* x, size_t n,
                          size_t bucket, float* out) {
  for (size_t b = 0; b < bucket_count(n, bucket); ++b)
    out[b] = bucket_stat(spec, stat, x, n, bucket, b);
}

size_t bucket_param(const CodecSpec& spec) {
  const int64_t bucket = spec.get_int("bucket", 512);
  if (bucket < 0 || bucket >= (int64_t{1} << 31))
    throw CodecError("codec '" + spec.name() + "': parameter 'bucket' must be in [0, 2^31), got " +
                     std::to_string(bucket) + " (0 = one bucket for the whole array)");
  return size_t(bucket);
}

}  // namespace cmpi::compress
