// ZFP fixed-rate coding of 1-D floats, the readable reference: every step of
// zfp_fixed_rate.h written out plainly, one bit at a time, in the order libzfp
// reads and writes them. The fast coder (zfp_fixed_rate_fast.h) must give
// the same bytes and floats; tests check this file against libzfp itself.
//
// How it works: the stream is cut into blocks of exactly maxbits bits. The
// encoder zeroes the output, then per block writes the exponent header and the
// bit planes from the MSB down (verbatim bits for values already significant,
// then group tests with unary scans), stopping when the block's budget is
// spent; the rest of the block stays zero (padding). The decoder mirrors each
// read under the same budget, then undoes negabinary, the lifting transform
// and the block-floating-point cast.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "compress/zfp_fixed_rate.h"
#include "compress/zfp_fixed_rate_block.h"

namespace cmpi::compress::zfp_fixed_rate {
namespace reference {
namespace {

constexpr uint32_t kBlock = 4;
constexpr uint32_t kHeaderBits = 9;  // 1 nonzero flag + 8 exponent bits
constexpr uint32_t kPlanes = 32;

class BitWriter {
 public:
  explicit BitWriter(uint8_t* out) : out_(out) {}
  // Writes the low bit of `bit`, returns it.
  uint32_t put(uint32_t bit) {
    bit &= 1u;
    if (bit) out_[pos_ >> 3] = static_cast<uint8_t>(out_[pos_ >> 3] | (1u << (pos_ & 7)));
    ++pos_;
    return bit;
  }
  // Writes the low `count` bits of value, LSB first; returns value >> count.
  uint64_t put(uint64_t value, uint32_t count) {
    for (uint32_t i = 0; i < count; ++i, value >>= 1) put(static_cast<uint32_t>(value));
    return value;
  }
  size_t pos() const { return pos_; }
  void seek(size_t pos) { pos_ = pos; }

 private:
  uint8_t* out_;
  size_t pos_ = 0;
};

class BitReader {
 public:
  explicit BitReader(const uint8_t* in) : in_(in) {}
  uint32_t get() {
    const uint32_t bit = (in_[pos_ >> 3] >> (pos_ & 7)) & 1u;
    ++pos_;
    return bit;
  }
  uint64_t get(uint32_t count) {
    uint64_t value = 0;
    for (uint32_t i = 0; i < count; ++i) value |= uint64_t{get()} << i;
    return value;
  }
  size_t pos() const { return pos_; }
  void seek(size_t pos) { pos_ = pos; }

 private:
  const uint8_t* in_;
  size_t pos_ = 0;
};

int block_exponent(const float* f) {
  float max = 0;
  for (uint32_t i = 0; i < kBlock; ++i) {
    const float a = std::fabs(f[i]);
    if (max < a) max = a;
  }
  if (max > 0) {
    int e = 0;
    std::frexp(max, &e);
    return std::max(e, -126);
  }
  return -127;
}

// Bit planes 31..0 of u under a budget of `bits`.
void encode_planes(const uint32_t* u, uint32_t bits, BitWriter& w) {
  uint32_t n = 0;
  for (uint32_t k = kPlanes; bits && k-- > 0;) {
    uint64_t x = 0;
    for (uint32_t i = 0; i < kBlock; ++i) x += uint64_t((u[i] >> k) & 1u) << i;
    // The n values already significant: their bits verbatim.
    const uint32_t m = std::min(n, bits);
    bits -= m;
    x = w.put(x, m);
    // The rest: group test, then a unary scan to the next set bit.
    for (; bits && n < kBlock; x >>= 1, n++) {
      bits--;
      if (w.put(x != 0)) {
        for (; bits && n < kBlock - 1; x >>= 1, n++) {
          bits--;
          if (w.put(static_cast<uint32_t>(x & 1u))) break;
        }
      } else {
        break;
      }
    }
  }
}

void decode_planes(BitReader& r, uint32_t bits, uint32_t* u) {
  for (uint32_t i = 0; i < kBlock; ++i) u[i] = 0;
  uint32_t n = 0;
  for (uint32_t k = kPlanes; bits && k-- > 0;) {
    const uint32_t m = std::min(n, bits);
    bits -= m;
    uint64_t x = r.get(m);
    for (; bits && n < kBlock; n++) {
      bits--;
      if (r.get()) {
        for (; bits && n < kBlock - 1; n++) {
          bits--;
          if (r.get()) break;
        }
        // Set the bit the scan stopped at, found or not (budget spent).
        x += uint64_t{1} << n;
      } else {
        break;
      }
    }
    for (uint32_t i = 0; x; i++, x >>= 1) u[i] += static_cast<uint32_t>(x & 1u) << k;
  }
}

void encode_block(const float* f, uint32_t maxbits, BitWriter& w) {
  const size_t start = w.pos();
  const int emax = block_exponent(f);
  const uint32_t e = static_cast<uint32_t>(emax + 127);
  if (e == 0) {
    w.put(0u);
  } else {
    w.put(2 * e + 1, kHeaderBits);
    const float s = std::ldexp(1.f, 30 - emax);
    int32_t y[kBlock];
    for (uint32_t i = 0; i < kBlock; ++i) y[i] = block::to_int(s * f[i]);
    block::fwd_lift(y);
    uint32_t u[kBlock];
    for (uint32_t i = 0; i < kBlock; ++i) u[i] = block::to_negabinary(y[i]);
    encode_planes(u, maxbits - kHeaderBits, w);
  }
  w.seek(start + maxbits);  // the rest of the block is zero padding
}

void decode_block(BitReader& r, uint32_t maxbits, float* f) {
  const size_t start = r.pos();
  if (!r.get()) {
    for (uint32_t i = 0; i < kBlock; ++i) f[i] = 0;
  } else {
    const int emax = static_cast<int>(r.get(8)) - 127;
    uint32_t u[kBlock];
    decode_planes(r, maxbits - kHeaderBits, u);
    int32_t y[kBlock];
    for (uint32_t i = 0; i < kBlock; ++i) y[i] = block::from_negabinary(u[i]);
    block::inv_lift(y);
    const float s = std::ldexp(1.f, emax - 30);
    for (uint32_t i = 0; i < kBlock; ++i) f[i] = s * static_cast<float>(y[i]);
  }
  r.seek(start + maxbits);
}

}  // namespace

void encode(const float* in, size_t n, uint32_t maxbits, uint32_t word_bits, uint8_t* out) {
  std::memset(out, 0, stream_bytes(n, maxbits, word_bits));
  BitWriter w(out);
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) encode_block(in + i, maxbits, w);
  if (i < n) {
    float f[kBlock];
    block::pad_partial(in + i, n - i, f);
    encode_block(f, maxbits, w);
  }
}

void decode(const uint8_t* in, size_t n, uint32_t maxbits, uint32_t, float* out) {
  BitReader r(in);
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) decode_block(r, maxbits, out + i);
  if (i < n) {
    float f[kBlock];
    decode_block(r, maxbits, f);
    std::copy(f, f + (n - i), out + i);
  }
}

}  // namespace reference

uint32_t block_bits(double rate) {
  const auto bits = static_cast<uint32_t>(std::floor(4 * rate + 0.5));
  return std::max(bits, 9u);
}

}  // namespace cmpi::compress::zfp_fixed_rate
