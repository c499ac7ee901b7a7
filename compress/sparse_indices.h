// Compact coding of the kept positions of a sparse vector: k strictly
// increasing indices in [0, n). Four forms; the encoder measures all that
// apply and keeps the smallest, so the choice follows the density actually
// seen rather than a guess:
//   all           k == n: no bytes at all.
//   bitmap        ceil(n/8) bytes, bit i (LSB first) set iff i is kept.
//                 Best above roughly 1 kept index in 8-10.
//   delta_fixed   one byte `w`, then the gaps packed at w bits each
//                 (bit_packing.h), w = bits of the largest gap (<= 32).
//                 Gaps are g0 = i0 and gj = ij - i(j-1) - 1, so runs cost 0.
//                 Best when gaps are even (random or top-k positions).
//   delta_varint  the same gaps as LEB128 varints (7 bits per byte, high bit
//                 = more bytes follow). Best when a few gaps are huge and the
//                 rest small (clustered positions), which would force a wide
//                 fixed width.
// Ties go to the form that decodes fastest (all, bitmap, fixed, varint).
// read_indices validates everything (lengths, padding bits, bounds, order)
// and throws DecodeError("body", ...) naming the problem.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cmpi::compress {

enum class IndexForm : uint8_t {
  kAll = 0,
  kBitmap = 1,
  kDeltaFixed = 2,
  kDeltaVarint = 3,
};
constexpr int kIndexFormCount = 4;

const char* index_form_name(IndexForm form);

constexpr size_t kIndexFormUnavailable = ~size_t{0};

// Bytes `form` needs for the sorted indices idx[0..k) in [0, n), or
// kIndexFormUnavailable if it cannot hold them (all with k < n, delta_fixed
// with a gap wider than 32 bits).
size_t index_form_bytes(IndexForm form, const uint64_t* idx, size_t k, size_t n);

// The smallest applicable form (ties: lower enum value).
IndexForm smallest_index_form(const uint64_t* idx, size_t k, size_t n);

// Writes idx[0..k) in `form` to out (room for index_form_bytes(...)); returns
// the bytes written. Throws std::invalid_argument if the form cannot hold them
// or the indices are not strictly increasing below n.
size_t write_indices(IndexForm form, const uint64_t* idx, size_t k, size_t n, uint8_t* out);

// Decodes exactly `bytes` bytes of `form` holding k indices below n into
// idx[0..k). Throws DecodeError("body", ...) on any inconsistency.
void read_indices(IndexForm form, const uint8_t* in, size_t bytes, size_t k, size_t n,
                  uint64_t* idx);

}  // namespace cmpi::compress
