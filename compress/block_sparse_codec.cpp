// Encoding is one pass: each block is tested for any set bit (an OR over its
// words, which vectorizes) and the non-zero ones are copied behind the index
// stream, whose form (sparse_indices.h) is chosen once the list is known.
// Decoding validates counts and lengths against the body size before reading
// indices, and the indices before writing any value.
#include "compress/block_sparse_codec.h"

#include <algorithm>
#include <string>

#include "compress/byte_order.h"
#include "compress/sparse_body.h"
#include "compress/sparse_indices.h"

namespace cmpi::compress {
namespace {

constexpr int64_t kMaxBlock = int64_t(1) << 20;

size_t block_count(size_t n, size_t block) {
  return (n + block - 1) / block;
}

}  // namespace

BlockSparseCodec::BlockSparseCodec(const CodecSpec& spec) : Codec(spec) {
  spec.require_only({"block", "select"});
  const int64_t block = spec.get_int("block", 256);
  if (block < 1 || block > kMaxBlock)
    throw CodecError("codec 'block_sparse': parameter 'block' must be in 1.." +
                     std::to_string(kMaxBlock) + " floats, got " + spec.get_string("block", ""));
  block_ = size_t(block);
  const std::string select = spec.get_string("select", "auto");
  if (select == "auto")
    select_ = Select::kAuto;
  else if (select == "always")
    select_ = Select::kAlways;
  else
    throw CodecError("codec 'block_sparse': parameter 'select' must be auto or always, got '" +
                     select + "'");
}

size_t BlockSparseCodec::max_body_bytes(size_t n) const {
  return kSparseBodyFixedBytes + (block_count(n, block_) + 7) / 8 + 4 * n;
}

size_t BlockSparseCodec::encode_body(const float* in, size_t n, uint8_t* out, size_t, uint16_t&) {
  const size_t blocks = block_count(n, block_);
  nonzero_.clear();
  for (size_t b = 0; b < blocks; ++b) {
    const size_t start = b * block_;
    if (block_has_nonzero_bits(in + start, std::min(block_, n - start))) nonzero_.push_back(b);
  }
  const size_t k = nonzero_.size();
  const IndexForm form = smallest_index_form(nonzero_.data(), k, blocks);
  const size_t index_bytes =
      write_indices(form, nonzero_.data(), k, blocks, out + kSparseBodyFixedBytes);
  store_le64(out, k);
  out[8] = uint8_t(form);
  store_le64(out + 9, index_bytes);
  uint8_t* values = out + kSparseBodyFixedBytes + index_bytes;
  for (uint64_t b : nonzero_) {
    const size_t start = b * block_, len = std::min(block_, n - start);
    std::memcpy(values, in + start, len * sizeof(float));
    values += len * sizeof(float);
  }
  return size_t(values - out);
}

void BlockSparseCodec::decode_body(const uint8_t* in, size_t size, float* out, size_t n,
                                   uint16_t flags) const {
  if (flags != 0) throw DecodeError("flags", "block_sparse payload has flags set");
  const SparseBodyInfo info = sparse_body_info(in, size);
  const size_t blocks = block_count(n, block_);
  const size_t room = size - kSparseBodyFixedBytes;
  if (info.kept > blocks)
    throw DecodeError("body", "non-zero block count " + std::to_string(info.kept) + " exceeds " +
                                  std::to_string(blocks) + " blocks");
  if (info.index_bytes > room)
    throw DecodeError("body", "index stream of " + std::to_string(info.index_bytes) +
                                  " bytes overruns a body of " + std::to_string(size));
  if (info.index_form >= kIndexFormCount)
    throw DecodeError("body", "unknown index form " + std::to_string(info.index_form));
  std::vector<uint64_t> idx(info.kept);  // kept <= blocks <= n
  read_indices(IndexForm(info.index_form), in + kSparseBodyFixedBytes, info.index_bytes, info.kept,
               blocks, idx.data());
  size_t value_floats = 0;
  for (uint64_t b : idx) value_floats += std::min(block_, n - b * block_);
  if (room - info.index_bytes != value_floats * sizeof(float))
    throw DecodeError("body", std::to_string(info.kept) + " blocks need " +
                                  std::to_string(value_floats * sizeof(float)) +
                                  " value bytes, the body holds " +
                                  std::to_string(room - info.index_bytes));
  if (n) std::memset(out, 0, n * sizeof(float));
  const uint8_t* values = in + kSparseBodyFixedBytes + info.index_bytes;
  for (uint64_t b : idx) {
    const size_t start = b * block_, len = std::min(block_, n - start);
    std::memcpy(out + start, values, len * sizeof(float));
    values += len * sizeof(float);
  }
}

}  // namespace cmpi::compress
