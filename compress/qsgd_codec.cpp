// Encode runs in blocks of kBlock values: the block's random numbers are
// drawn first (24-bit uniforms from RandomBlocks), then each bucket segment
// of the block is quantized with its own scale by a branch-free loop, and the
// block's codes are packed (kBlock is a multiple of 8, so every block starts
// on a byte boundary of the code stream). Decode mirrors it: unpack a block,
// check every code is at most 2s, scale.
#include "compress/qsgd_codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "compress/bit_packing.h"
#include "compress/bucket_stats.h"
#include "compress/quantize_kernels.h"

namespace cmpi::compress {
namespace {

constexpr size_t kBlock = 1024;
constexpr uint32_t kMaxLevels = 65535;

// Quantizes x[0..len) with scale `norm` into codes in [0, 2s]; `u24` holds
// 24-bit uniform integers. A denormal norm, whose s / N overflows float,
// takes a slower double-precision path with the same rounding rule.
void quantize_segment(const float* x, size_t len, float norm, uint32_t s, const uint32_t* u24,
                      uint32_t* codes) {
  const float inv = norm > 0 ? float(double(s) / double(norm)) : 0.f;
  if (std::isfinite(inv)) return kernels::qsgd_quantize(x, len, inv, s, u24, codes);
  const double wide = double(s) / double(norm);
  for (size_t j = 0; j < len; ++j) {
    const double r = std::fabs(double(x[j])) * wide;
    uint32_t level = uint32_t(r);
    level += double(u24[j]) * 0x1p-24 < r - double(level);
    level = std::min(level, s);
    codes[j] = std::signbit(x[j]) ? s - level : s + level;
  }
}

}  // namespace

QsgdCodec::QsgdCodec(const CodecSpec& spec)
    : Codec(spec), random_(uint64_t(spec.get_int("seed", 0))) {
  spec.require_only({"levels", "bucket", "norm", "seed"});
  const int64_t levels = spec.get_int("levels", 16);
  if (levels < 1 || levels > kMaxLevels)
    throw CodecError("codec 'qsgd': parameter 'levels' must be in [1, " +
                     std::to_string(kMaxLevels) + "], got " + std::to_string(levels));
  levels_ = uint32_t(levels);
  bucket_ = bucket_param(spec);
  const std::string norm = spec.get_string("norm", "l2");
  if (norm != "l2" && norm != "max")
    throw CodecError("codec 'qsgd': parameter 'norm' must be l2 or max, got '" + norm + "'");
  max_norm_ = norm == "max";
  code_bits_ = bit_width_of(2 * uint64_t(levels_));
}

size_t QsgdCodec::max_body_bytes(size_t n) const {
  return 4 * bucket_count(n, bucket_) + packed_bytes(n, code_bits_);
}

size_t QsgdCodec::encode_body(const float* in, size_t n, uint8_t* out, size_t, uint16_t&) {
  const size_t buckets = bucket_count(n, bucket_);
  const size_t span = bucket_span(n, bucket_);
  const BucketStat stat = max_norm_ ? BucketStat::kMaxAbs : BucketStat::kL2Norm;
  uint8_t* packed = out + 4 * buckets;

  uint32_t u24[kBlock];
  uint32_t codes[kBlock];
  float scale = 0;
  for (size_t start = 0; start < n; start += kBlock) {
    const size_t len = std::min(kBlock, n - start);
    random_.fill(u24, len, 24);
    for (size_t i = start; i < start + len;) {
      const size_t b = i / span;
      const size_t segment_end = std::min(start + len, (b + 1) * span);
      // A bucket's scale is computed when its first value is reached, so
      // for buckets up to kBlock values the data is still in cache when it
      // is quantized.
      if (i == b * span) {
        scale = bucket_stat(spec(), stat, in, n, bucket_, b);
        std::memcpy(out + 4 * b, &scale, 4);
      }
      quantize_segment(in + i, segment_end - i, scale, levels_, u24 + (i - start),
                       codes + (i - start));
      i = segment_end;
    }
    pack_bits(codes, len, code_bits_, packed + packed_bytes(start, code_bits_));
  }
  return 4 * buckets + packed_bytes(n, code_bits_);
}

void QsgdCodec::decode_body(const uint8_t* in, size_t size, float* out, size_t n,
                            uint16_t flags) const {
  if (flags != 0) throw DecodeError("flags", "qsgd payload has flags set");
  const size_t buckets = bucket_count(n, bucket_);
  const size_t span = bucket_span(n, bucket_);
  if (n > std::numeric_limits<size_t>::max() / 64 ||
      size != 4 * buckets + packed_bytes(n, code_bits_))
    throw DecodeError("body", "qsgd body of " + std::to_string(size) + " bytes for " +
                                  std::to_string(n) + " values (expected " +
                                  std::to_string(4 * buckets + packed_bytes(n, code_bits_)) + ")");
  std::vector<float> step(buckets);
  for (size_t b = 0; b < buckets; ++b) {
    float scale;
    std::memcpy(&scale, in + 4 * b, 4);
    if (!(scale >= 0) || !std::isfinite(scale))
      throw DecodeError(
          "body", "qsgd scale of bucket " + std::to_string(b) + " is " + std::to_string(scale));
    step[b] = scale / float(levels_);
  }
  const uint8_t* packed = in + 4 * buckets;
  if (!packed_padding_is_zero(packed, n, code_bits_))
    throw DecodeError("body", "qsgd code stream has nonzero padding bits");

  const uint32_t max_code = 2 * levels_;
  uint32_t codes[kBlock];
  for (size_t start = 0; start < n; start += kBlock) {
    const size_t len = std::min(kBlock, n - start);
    unpack_bits(packed + packed_bytes(start, code_bits_), len, code_bits_, codes);
    if (kernels::max_code(codes, len) > max_code) {
      const size_t j = size_t(
          std::find_if(codes, codes + len, [&](uint32_t c) { return c > max_code; }) - codes);
      throw DecodeError("body", "qsgd code " + std::to_string(codes[j]) + " of value " +
                                    std::to_string(start + j) +
                                    " exceeds 2s = " + std::to_string(max_code));
    }
    for (size_t i = start; i < start + len;) {
      const size_t b = i / span;
      const size_t segment_end = std::min(start + len, (b + 1) * span);
      kernels::qsgd_dequantize(codes + (i - start), segment_end - i, levels_, step[b], out + i);
      i = segment_end;
    }
  }
}

std::vector<uint64_t> QsgdCodec::random_state() const {
  return random_.state();
}

void QsgdCodec::restore_random_state(const std::vector<uint64_t>& words) {
  random_.set_state(words, "codec " + spec().to_string());
}

}  // namespace cmpi::compress
