// Gap streams are produced and consumed in blocks of kBlock gaps, which keeps
// the delta_fixed coder on the fast group kernels of bit_packing without a
// k-sized temporary: every block but the last is a multiple of 8 gaps and so
// ends on a byte boundary.
#include "compress/sparse_indices.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "compress/bit_packing.h"
#include "compress/payload.h"

namespace cmpi::compress {
namespace {

constexpr size_t kBlock = 1024;
constexpr unsigned kMaxVarintBytes = 10;  // ceil(64 / 7)

uint64_t gap_at(const uint64_t* idx, size_t j) {
  return j == 0 ? idx[0] : idx[j] - idx[j - 1] - 1;
}

unsigned varint_bytes(uint64_t v) {
  unsigned bytes = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++bytes;
  }
  return bytes;
}

[[noreturn]] void fail(IndexForm form, const std::string& what) {
  throw DecodeError("body", std::string(index_form_name(form)) + " indices: " + what);
}

void check_sorted_below(const uint64_t* idx, size_t k, size_t n) {
  for (size_t j = 0; j < k; ++j) {
    if (idx[j] >= n || (j > 0 && idx[j] <= idx[j - 1]))
      throw std::invalid_argument("sparse indices: index " + std::to_string(j) + " = " +
                                  std::to_string(idx[j]) +
                                  " is not strictly increasing below n = " + std::to_string(n));
  }
}

struct GapStats {
  uint64_t max_gap = 0;
  size_t varint_total = 0;
};

GapStats gap_stats(const uint64_t* idx, size_t k) {
  GapStats stats;
  for (size_t j = 0; j < k; ++j) {
    const uint64_t gap = gap_at(idx, j);
    stats.max_gap = std::max(stats.max_gap, gap);
    stats.varint_total += varint_bytes(gap);
  }
  return stats;
}

size_t fixed_bytes(const GapStats& stats, size_t k) {
  const unsigned width = bit_width_of(stats.max_gap);
  return width > kMaxPackWidth ? kIndexFormUnavailable : 1 + packed_bytes(k, width);
}

size_t write_bitmap(const uint64_t* idx, size_t k, size_t n, uint8_t* out) {
  const size_t bytes = (n + 7) / 8;
  std::memset(out, 0, bytes);
  for (size_t j = 0; j < k; ++j) out[idx[j] / 8] |= uint8_t(1u << (idx[j] % 8));
  return bytes;
}

size_t write_fixed(const uint64_t* idx, size_t k, uint8_t* out) {
  const unsigned width = bit_width_of(gap_stats(idx, k).max_gap);
  out[0] = uint8_t(width);
  uint8_t* p = out + 1;
  uint32_t gaps[kBlock];
  for (size_t start = 0; start < k; start += kBlock) {
    const size_t count = std::min(kBlock, k - start);
    for (size_t j = 0; j < count; ++j) gaps[j] = uint32_t(gap_at(idx, start + j));
    pack_bits(gaps, count, width, p);
    p += packed_bytes(count, width);
  }
  return size_t(p - out);
}

size_t write_varint(const uint64_t* idx, size_t k, uint8_t* out) {
  uint8_t* p = out;
  for (size_t j = 0; j < k; ++j) {
    uint64_t gap = gap_at(idx, j);
    while (gap >= 0x80) {
      *p++ = uint8_t(gap | 0x80);
      gap >>= 7;
    }
    *p++ = uint8_t(gap);
  }
  return size_t(p - out);
}

// Appends position `next + gap` as index j; `next` is the smallest index the
// j-th one may take (0, then previous + 1).
void place(IndexForm form, uint64_t* idx, size_t j, uint64_t& next, uint64_t gap, size_t n) {
  if (next >= n || gap >= n - next)
    fail(form, "index " + std::to_string(j) + " (gap " + std::to_string(gap) +
                   ") runs past n = " + std::to_string(n));
  idx[j] = next + gap;
  next = idx[j] + 1;
}

void read_bitmap(const uint8_t* in, size_t bytes, size_t k, size_t n, uint64_t* idx) {
  const IndexForm form = IndexForm::kBitmap;
  if (bytes != (n + 7) / 8)
    fail(form, std::to_string(bytes) + " bytes for n = " + std::to_string(n) + " (expected " +
                   std::to_string((n + 7) / 8) + ")");
  if (n % 8 != 0 && (in[bytes - 1] >> (n % 8)) != 0)
    fail(form, "bits set past n = " + std::to_string(n));
  size_t found = 0;
  for (size_t byte = 0; byte < bytes; byte += 8) {
    uint64_t word = 0;
    std::memcpy(&word, in + byte, std::min<size_t>(8, bytes - byte));
    if (size_t(__builtin_popcountll(word)) > k - found)
      fail(form, "more than the " + std::to_string(k) + " kept indices the body declares");
    while (word) {
      idx[found++] = byte * 8 + unsigned(__builtin_ctzll(word));
      word &= word - 1;
    }
  }
  if (found != k)
    fail(form, std::to_string(found) + " bits set, body declares " + std::to_string(k));
}

void read_fixed(const uint8_t* in, size_t bytes, size_t k, size_t n, uint64_t* idx) {
  const IndexForm form = IndexForm::kDeltaFixed;
  if (bytes < 1) fail(form, "missing width byte");
  const unsigned width = in[0];
  if (width > kMaxPackWidth) fail(form, "gap width " + std::to_string(width) + " > 32");
  if (k > (~size_t{0} - 7) / kMaxPackWidth || bytes - 1 != packed_bytes(k, width))
    fail(form, std::to_string(bytes - 1) + " gap bytes for " + std::to_string(k) + " gaps of " +
                   std::to_string(width) + " bits");
  if (!packed_padding_is_zero(in + 1, k, width)) fail(form, "nonzero padding bits");
  const uint8_t* p = in + 1;
  uint32_t gaps[kBlock];
  uint64_t next = 0;
  for (size_t start = 0; start < k; start += kBlock) {
    const size_t count = std::min(kBlock, k - start);
    unpack_bits(p, count, width, gaps);
    p += packed_bytes(count, width);
    for (size_t j = 0; j < count; ++j) place(form, idx, start + j, next, gaps[j], n);
  }
}

void read_varint(const uint8_t* in, size_t bytes, size_t k, size_t n, uint64_t* idx) {
  const IndexForm form = IndexForm::kDeltaVarint;
  const uint8_t* p = in;
  const uint8_t* end = in + bytes;
  uint64_t next = 0;
  for (size_t j = 0; j < k; ++j) {
    uint64_t gap = 0;
    for (unsigned b = 0;; ++b) {
      if (p == end) fail(form, "stream ends inside gap " + std::to_string(j));
      if (b == kMaxVarintBytes - 1 && *p > 1)
        fail(form, "gap " + std::to_string(j) + " overflows 64 bits");
      gap |= uint64_t(*p & 0x7f) << (7 * b);
      if ((*p++ & 0x80) == 0) break;
    }
    place(form, idx, j, next, gap, n);
  }
  if (p != end)
    fail(form, std::to_string(end - p) + " bytes left after " + std::to_string(k) + " gaps");
}

}  // namespace

const char* index_form_name(IndexForm form) {
  switch (form) {
    case IndexForm::kAll:
      return "all";
    case IndexForm::kBitmap:
      return "bitmap";
    case IndexForm::kDeltaFixed:
      return "delta_fixed";
    case IndexForm::kDeltaVarint:
      return "delta_varint";
  }
  return "unknown";
}

size_t index_form_bytes(IndexForm form, const uint64_t* idx, size_t k, size_t n) {
  switch (form) {
    case IndexForm::kAll:
      return k == n ? 0 : kIndexFormUnavailable;
    case IndexForm::kBitmap:
      return (n + 7) / 8;
    case IndexForm::kDeltaFixed:
      return fixed_bytes(gap_stats(idx, k), k);
    case IndexForm::kDeltaVarint:
      return gap_stats(idx, k).varint_total;
  }
  return kIndexFormUnavailable;
}

IndexForm smallest_index_form(const uint64_t* idx, size_t k, size_t n) {
  if (k == n) return IndexForm::kAll;
  const GapStats stats = gap_stats(idx, k);
  IndexForm best = IndexForm::kBitmap;
  size_t best_bytes = (n + 7) / 8;
  if (fixed_bytes(stats, k) < best_bytes) {
    best = IndexForm::kDeltaFixed;
    best_bytes = fixed_bytes(stats, k);
  }
  if (stats.varint_total < best_bytes) best = IndexForm::kDeltaVarint;
  return best;
}

size_t write_indices(IndexForm form, const uint64_t* idx, size_t k, size_t n, uint8_t* out) {
  check_sorted_below(idx, k, n);
  if (index_form_bytes(form, idx, k, n) == kIndexFormUnavailable)
    throw std::invalid_argument(std::string("sparse indices: form ") + index_form_name(form) +
                                " cannot hold " + std::to_string(k) + " of " + std::to_string(n) +
                                " indices");
  switch (form) {
    case IndexForm::kAll:
      return 0;
    case IndexForm::kBitmap:
      return write_bitmap(idx, k, n, out);
    case IndexForm::kDeltaFixed:
      return write_fixed(idx, k, out);
    case IndexForm::kDeltaVarint:
      return write_varint(idx, k, out);
  }
  throw std::invalid_argument("sparse indices: unknown form");
}

void read_indices(IndexForm form, const uint8_t* in, size_t bytes, size_t k, size_t n,
                  uint64_t* idx) {
  if (k > n) fail(form, std::to_string(k) + " kept indices exceed n = " + std::to_string(n));
  switch (form) {
    case IndexForm::kAll:
      if (k != n) fail(form, std::to_string(k) + " kept of n = " + std::to_string(n));
      if (bytes != 0) fail(form, std::to_string(bytes) + " bytes, expected none");
      for (size_t j = 0; j < k; ++j) idx[j] = j;
      return;
    case IndexForm::kBitmap:
      return read_bitmap(in, bytes, k, n, idx);
    case IndexForm::kDeltaFixed:
      return read_fixed(in, bytes, k, n, idx);
    case IndexForm::kDeltaVarint:
      return read_varint(in, bytes, k, n, idx);
  }
  throw DecodeError("body", "unknown index form " + std::to_string(int(form)));
}

}  // namespace cmpi::compress
