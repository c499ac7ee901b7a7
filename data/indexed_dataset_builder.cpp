// Tokens are narrowed to the dtype in a scratch buffer (range-checked) and
// appended to .bin; .idx is assembled at finalize from the kept sizes, the
// pointers (running byte offsets, recomputed there) and the document index.
#include "data/indexed_dataset_builder.h"

#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace cmpi::data {
namespace {

template <typename T>
void append(std::vector<uint8_t>& out, T value) {
  const size_t at = out.size();
  out.resize(at + sizeof value);
  std::memcpy(out.data() + at, &value, sizeof value);  // little-endian host (reader asserts)
}

}  // namespace

IndexedDatasetBuilder::IndexedDatasetBuilder(std::string prefix, TokenDtype dtype)
    : prefix_(std::move(prefix)),
      dtype_(dtype),
      bin_(std::make_unique<CheckedFileWriter>(prefix_ + ".bin.tmp")) {}

IndexedDatasetBuilder::~IndexedDatasetBuilder() {
  if (finalized_) return;
  bin_.reset();
  std::remove((prefix_ + ".bin.tmp").c_str());
  std::remove((prefix_ + ".idx.tmp").c_str());
}

void IndexedDatasetBuilder::add_sequence(const int32_t* tokens, size_t count) {
  if (finalized_) throw std::logic_error(prefix_ + ": add_sequence after finalize");
  if (count > size_t(std::numeric_limits<int32_t>::max())) {
    throw std::out_of_range(prefix_ + ": sequence of " + std::to_string(count) +
                            " tokens exceeds the int32 size field");
  }
  const int64_t max_token = int64_t(dtype_max_token(dtype_));
  for (size_t i = 0; i < count; ++i) {
    if (tokens[i] < 0 || tokens[i] > max_token) {
      throw std::out_of_range(prefix_ + ": token " + std::to_string(tokens[i]) + " at position " +
                              std::to_string(i) + " does not fit " + dtype_name(dtype_));
    }
  }
  if (dtype_ == TokenDtype::kInt32) {
    bin_->write(tokens, count * sizeof(int32_t));
  } else {
    scratch_.resize(count * sizeof(uint16_t));
    uint16_t* narrow = reinterpret_cast<uint16_t*>(scratch_.data());
    for (size_t i = 0; i < count; ++i) narrow[i] = uint16_t(tokens[i]);
    bin_->write(narrow, scratch_.size());
  }
  sizes_.push_back(int32_t(count));
  tokens_ += count;
}

void IndexedDatasetBuilder::end_document() {
  document_index_.push_back(int64_t(sizes_.size()));
}

void IndexedDatasetBuilder::add_document(const std::vector<int32_t>& tokens) {
  add_sequence(tokens.data(), tokens.size());
  end_document();
}

void IndexedDatasetBuilder::finalize() {
  if (finalized_) throw std::logic_error(prefix_ + ": finalize called twice");
  if (document_index_.back() != int64_t(sizes_.size())) end_document();
  bin_->close();

  std::vector<uint8_t> header;
  header.insert(header.end(), kIndexMagic, kIndexMagic + sizeof kIndexMagic);
  append<uint64_t>(header, kIndexVersion);
  append<uint8_t>(header, uint8_t(dtype_));
  append<uint64_t>(header, sizes_.size());
  append<uint64_t>(header, document_index_.size());
  const std::string idx_tmp = prefix_ + ".idx.tmp";
  CheckedFileWriter idx(idx_tmp);
  idx.write(header.data(), header.size());
  idx.write(sizes_.data(), sizes_.size() * sizeof(int32_t));
  std::vector<int64_t> pointers(sizes_.size());
  int64_t offset = 0;
  const int64_t token_bytes = int64_t(dtype_bytes(dtype_));
  for (size_t i = 0; i < sizes_.size(); ++i) {
    pointers[i] = offset;
    offset += int64_t(sizes_[i]) * token_bytes;
  }
  idx.write(pointers.data(), pointers.size() * sizeof(int64_t));
  idx.write(document_index_.data(), document_index_.size() * sizeof(int64_t));
  idx.close();

  checked_rename(prefix_ + ".bin.tmp", prefix_ + ".bin");
  checked_rename(idx_tmp, prefix_ + ".idx");
  finalized_ = true;
}

}  // namespace cmpi::data
