// Sign bits are gathered 64 at a time into a word (quantize_kernels: the
// floats' top bits) and stored little-endian, which is the bit_packing stream
// layout for width 1; decode sets the sign bit of the scale per stream bit.
#include "compress/sign_codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "compress/bit_packing.h"
#include "compress/bucket_stats.h"
#include "compress/quantize_kernels.h"

namespace cmpi::compress {

SignCodec::SignCodec(const CodecSpec& spec) : Codec(spec) {
  spec.require_only({"bucket"});
  bucket_ = bucket_param(spec);
}

size_t SignCodec::max_body_bytes(size_t n) const {
  return 4 * bucket_count(n, bucket_) + packed_bytes(n, 1);
}

size_t SignCodec::encode_body(const float* in, size_t n, uint8_t* out, size_t, uint16_t&) {
  const size_t buckets = bucket_count(n, bucket_);
  std::vector<float> scales(buckets);
  compute_bucket_stats(spec(), BucketStat::kMeanAbs, in, n, bucket_, scales.data());
  if (buckets) std::memcpy(out, scales.data(), 4 * buckets);
  uint8_t* bits_out = out + 4 * buckets;
  for (size_t start = 0; start < n; start += 64) {
    const size_t len = std::min<size_t>(64, n - start);
    const uint64_t word = kernels::sign_bits(in + start, len);
    std::memcpy(bits_out + start / 8, &word, (len + 7) / 8);
  }
  return 4 * buckets + packed_bytes(n, 1);
}

void SignCodec::decode_body(const uint8_t* in, size_t size, float* out, size_t n,
                            uint16_t flags) const {
  if (flags != 0) throw DecodeError("flags", "sign payload has flags set");
  const size_t buckets = bucket_count(n, bucket_);
  const size_t span = bucket_span(n, bucket_);
  const size_t expected = 4 * buckets + packed_bytes(n, 1);
  if (size != expected)
    throw DecodeError("body", "sign body of " + std::to_string(size) + " bytes for " +
                                  std::to_string(n) + " values (expected " +
                                  std::to_string(expected) + ")");
  const uint8_t* bits_in = in + 4 * buckets;
  if (!packed_padding_is_zero(bits_in, n, 1))
    throw DecodeError("body", "sign bit stream has nonzero padding bits");
  for (size_t b = 0; b < buckets; ++b) {
    float scale;
    std::memcpy(&scale, in + 4 * b, 4);
    if (!(scale >= 0) || !std::isfinite(scale))
      throw DecodeError(
          "body", "sign scale of bucket " + std::to_string(b) + " is " + std::to_string(scale));
    const size_t begin = b * span;
    const size_t end = std::min(n, begin + span);
    kernels::sign_decode(bits_in, begin, end - begin, scale, out + begin);
  }
}

}  // namespace cmpi::compress
