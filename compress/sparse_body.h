// The body shared by the sparsifiers (topk, randomk, threshold): which
// positions were kept and their values; every other position decodes to 0.
//
//   offset  size         field
//   0       8            k             kept count, <= n
//   8       1            index form    IndexForm (sparse_indices.h)
//   9       8            index bytes   length of the index stream
//   17      index bytes  index stream  positions, strictly increasing
//   ...     4 k          values        float32, in position order
// Integers little-endian. The writer picks the smallest index form for the
// positions it is given, so the body is at most 17 + ceil(n/8) + 4k bytes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cmpi::compress {

constexpr size_t kSparseBodyFixedBytes = 17;

// Upper bound on a sparse body holding at most max_kept of n values.
constexpr size_t max_sparse_body_bytes(size_t max_kept, size_t n) {
  return kSparseBodyFixedBytes + (n + 7) / 8 + 4 * max_kept;
}

// Writes positions idx[0..k) (strictly increasing, < n) and their values;
// returns the body size.
size_t write_sparse_body(const uint64_t* idx, const float* values, size_t k, size_t n,
                         uint8_t* out);

// Validates a body of exactly `size` bytes and writes the dense vector of n
// floats (zeros except at the kept positions). Throws DecodeError("body").
void read_sparse_body(const uint8_t* in, size_t size, float* out, size_t n);

// Kept count and index form of a valid body (for tests and statistics);
// throws DecodeError("body") if the body is shorter than its fixed part.
struct SparseBodyInfo {
  uint64_t kept = 0;
  uint8_t index_form = 0;
  uint64_t index_bytes = 0;
};
SparseBodyInfo sparse_body_info(const uint8_t* in, size_t size);

}  // namespace cmpi::compress
