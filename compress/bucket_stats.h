// Per-bucket scale statistics for the quantizers (qsgd, sign): the input is
// cut into buckets of `bucket` consecutive values (the last may be shorter;
// bucket 0 means one bucket for the whole array), and each bucket gets one
// float statistic that travels with the payload.
#pragma once

#include <cstddef>
#include <cstdint>

#include "compress/codec_spec.h"

namespace cmpi::compress {

enum class BucketStat {
  kL2Norm,   // sqrt(sum x^2)
  kMaxAbs,   // max |x|
  kMeanAbs,  // sum |x| / bucket length
};

// Values per bucket for an array of n (bucket 0 -> n).
inline size_t bucket_span(size_t n, size_t bucket) {
  return bucket == 0 ? n : bucket;
}

// Number of buckets for n values (0 for n = 0).
inline size_t bucket_count(size_t n, size_t bucket) {
  if (n == 0) return 0;
  return bucket == 0 ? 1 : (n + bucket - 1) / bucket;
}

// Writes the statistic of every bucket of x[0..n) to out[0..bucket_count).
// Sums run in float over short blocks (several independent accumulators,
// which vectorise) and in double across blocks, so accuracy does not decay
// with the bucket length. Throws std::invalid_argument naming the codec of
// `spec` and the index if x holds a NaN or infinity, or naming the bucket if
// its statistic overflows float.
void compute_bucket_stats(const CodecSpec& spec, BucketStat stat, const float* x, size_t n,
                          size_t bucket, float* out);

// The statistic of bucket `index` alone, with the same checks (the error for
// non-finite input still names the first bad index of the whole array).
float bucket_stat(const CodecSpec& spec, BucketStat stat, const float* x, size_t n, size_t bucket,
                  size_t index);

// Reads a quantizer's `bucket` parameter (>= 0, < 2^31), default 512.
size_t bucket_param(const CodecSpec& spec);

}  // namespace cmpi::compress
