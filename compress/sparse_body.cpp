// Validation order matters for robustness: the kept count and the index
// length are checked against the body size before anything is allocated or
// read, so a corrupted count can neither trigger a huge allocation nor move a
// read past the end; positions are decoded (and checked) before any value is
// scattered into the output.
#include "compress/sparse_body.h"

#include <cstring>
#include <string>
#include <vector>

#include "compress/byte_order.h"
#include "compress/payload.h"
#include "compress/sparse_indices.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "sparse bodies store integers and floats little-endian");

namespace cmpi::compress {
size_t write_sparse_body(const uint64_t* idx, const float* values, size_t k, size_t n,
                         uint8_t* out) {
  const IndexForm form = smallest_index_form(idx, k, n);
  const size_t index_bytes = write_indices(form, idx, k, n, out + kSparseBodyFixedBytes);
  store_le64(out, k);
  out[8] = uint8_t(form);
  store_le64(out + 9, index_bytes);
  if (k) std::memcpy(out + kSparseBodyFixedBytes + index_bytes, values, 4 * k);
  return kSparseBodyFixedBytes + index_bytes + 4 * k;
}

SparseBodyInfo sparse_body_info(const uint8_t* in, size_t size) {
  if (size < kSparseBodyFixedBytes)
    throw DecodeError("body", "sparse body of " + std::to_string(size) +
                                  " bytes is shorter than its " +
                                  std::to_string(kSparseBodyFixedBytes) + "-byte fixed part");
  SparseBodyInfo info;
  info.kept = load_le64(in);
  info.index_form = in[8];
  info.index_bytes = load_le64(in + 9);
  return info;
}

void read_sparse_body(const uint8_t* in, size_t size, float* out, size_t n) {
  const SparseBodyInfo info = sparse_body_info(in, size);
  const size_t room = size - kSparseBodyFixedBytes;
  if (info.kept > n)
    throw DecodeError(
        "body", "kept count " + std::to_string(info.kept) + " exceeds n = " + std::to_string(n));
  if (info.kept > room / 4 || info.index_bytes != room - 4 * info.kept)
    throw DecodeError("body", "kept count " + std::to_string(info.kept) + " and index bytes " +
                                  std::to_string(info.index_bytes) + " do not fill a body of " +
                                  std::to_string(size) + " bytes");
  if (info.index_form >= kIndexFormCount)
    throw DecodeError("body", "unknown index form " + std::to_string(info.index_form));
  const size_t k = info.kept;
  std::vector<uint64_t> idx(k);  // k <= size / 4, so bounded by the input
  read_indices(IndexForm(info.index_form), in + kSparseBodyFixedBytes, info.index_bytes, k, n,
               idx.data());
  if (n) std::memset(out, 0, n * sizeof(float));
  const uint8_t* values = in + kSparseBodyFixedBytes + info.index_bytes;
  for (size_t j = 0; j < k; ++j) std::memcpy(out + idx[j], values + 4 * j, 4);
}

}  // namespace cmpi::compress
