// Native ZFP fixed-rate coding of 1-D float32 arrays, bit-identical to libzfp
// 1.0 (zfp_stream_set_rate(zfp, rate, zfp_type_float, 1, zfp_false)): the
// same stream bytes from encode and the same floats from decode.
//
// The algorithm (per block of 4 floats; a partial last block of n = 1, 2, 3
// values is padded to [a a a a], [a b b a], [a b c a] as libzfp does):
//   1. emax = frexp exponent of the largest |value|, clamped to >= -126; an
//      all-zero block (-0.0 included) is one 0 bit, then zero padding.
//   2. header: bit 1, then the biased exponent e = emax + 127 in 8 bits.
//   3. block floating point: int32 y = (int)(x * 2^(30 - emax)), the scale and
//      product in float and the conversion as x86 truncates (an overflowing
//      scale, emax < -97, gives INT_MIN, as libzfp's compiled code does).
//   4. forward lifting transform of (y0..y3), then negabinary:
//      u = (y + 0xaaaaaaaa) ^ 0xaaaaaaaa.
//   5. bit planes from 31 down to 0, the 4 bits (one per value) of a plane
//      coded as: the bits of the n already significant values verbatim, then
//      group tests (is any remaining bit set?) each followed by a unary scan
//      to the next set bit; the last value's bit is implied.
//   6. the code is cut at maxbits bits and zero-padded to maxbits.
// Bits go into the stream LSB first; block b occupies bits [b*maxbits,
// (b+1)*maxbits), and the stream is padded with zeros to whole libzfp words.
//
// maxbits = max(round(4 * rate), 9). The decoder reads exactly maxbits per
// block and, where a plane's code is cut by the budget after a positive group
// test, sets the bit of the value the scan stopped at (libzfp's behaviour).
//
// Two implementations: reference:: (zfp_fixed_rate_reference.cpp), a
// bit-at-a-time transcription of the steps above, and the fast coder
// (zfp_fixed_rate_fast.h: table-driven, block arithmetic in SIMD; its
// encoder and decoder in zfp_fixed_rate_fast_encode.cpp and _decode.cpp);
// tests check both against libzfp bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>

#include "compress/host_device.h"
#include "compress/simd_level.h"

namespace cmpi::compress::zfp_fixed_rate {

// Bits per 4-value block for `rate` bits per value, as libzfp sets them for
// 1-D floats without word alignment: max(floor(4 * rate + 0.5), 9).
uint32_t block_bits(double rate);

// Bytes of the stream for n floats: ceil(blocks * maxbits / word_bits) whole
// words of word_bits (8 in Debian's libzfp, else 64) bits. CMPI_HD: the
// device coder lays out its chunks with it too.
CMPI_HD inline size_t stream_bytes(size_t n, uint32_t maxbits, uint32_t word_bits) {
  const size_t bits = (n + 3) / 4 * maxbits;
  return (bits + word_bits - 1) / word_bits * (word_bits / 8);
}

// Encodes in[0..n) (finite floats) into out[0..stream_bytes(n, maxbits,
// word_bits)). 9 <= maxbits <= 128 (fixed rate above 32 bits per value is
// meaningless; the codec caps the rate at 32).
void encode(const float* in, size_t n, uint32_t maxbits, uint32_t word_bits, uint8_t* out);
// Decodes n floats from a stream of stream_bytes(n, maxbits, word_bits)
// bytes. Any byte string decodes to some floats; reads stay in the stream.
void decode(const uint8_t* in, size_t n, uint32_t maxbits, uint32_t word_bits, float* out);

// The fast coder at a given level (tests compare levels; simd_level_supported
// must hold). encode/decode above use best_simd_level().
void encode_at(SimdLevel level, const float* in, size_t n, uint32_t maxbits, uint32_t word_bits,
               uint8_t* out);
void decode_at(SimdLevel level, const uint8_t* in, size_t n, uint32_t maxbits, uint32_t word_bits,
               float* out);

namespace reference {
void encode(const float* in, size_t n, uint32_t maxbits, uint32_t word_bits, uint8_t* out);
void decode(const uint8_t* in, size_t n, uint32_t maxbits, uint32_t word_bits, float* out);
}  // namespace reference

}  // namespace cmpi::compress::zfp_fixed_rate
