// Reader of a Megatron-LM / GPT-NeoX indexed dataset (layout in
// indexed_dataset_format.h). Both files are memory-mapped; opening validates
// every header field, count, size, pointer and document index entry against
// the two file sizes in one pass over the index (token values are not
// touched), so that later accesses need no checks beyond the index bounds.
// Sequences are handed out as spans straight into the mapping.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "data/indexed_dataset_format.h"
#include "data/mapped_file.h"

namespace cmpi::data {

// A view of `size()` tokens inside the mapped .bin file; valid while the
// dataset that returned it is alive.
template <typename T>
class TokenSpan {
 public:
  TokenSpan(const T* data, size_t size) : data_(data), size_(size) {}
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T& operator[](size_t i) const { return data_[i]; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }

 private:
  const T* data_;
  size_t size_;
};

class IndexedDataset {
 public:
  // Opens PREFIX.idx and PREFIX.bin. Throws DatasetError naming the file and
  // field for any malformed input, std::runtime_error if a file cannot be
  // opened.
  explicit IndexedDataset(const std::string& prefix);

  TokenDtype dtype() const { return dtype_; }
  size_t sequences() const { return sequence_count_; }
  // Documents, i.e. document index entries minus one.
  size_t documents() const { return document_entries_ - 1; }
  uint64_t total_tokens() const { return total_tokens_; }

  size_t sequence_length(size_t sequence) const;
  // The tokens of one sequence; T must be the file's dtype (uint16_t for
  // uint16, int32_t for int32), else std::logic_error.
  template <typename T>
  TokenSpan<T> sequence(size_t sequence) const;
  // The tokens of one sequence widened to int32, whatever the dtype.
  void copy_sequence(size_t sequence, std::vector<int32_t>& out) const;

  // Document d spans sequences [document_begin(d), document_end(d)).
  size_t document_begin(size_t document) const;
  size_t document_end(size_t document) const;

  // Reads every token and throws DatasetError (the .bin file, field "tokens",
  // naming the sequence and position) at the first one >= vocab_size or
  // negative. Streams through the mapping once.
  void validate_tokens(uint64_t vocab_size) const;

  const std::string& idx_path() const { return idx_.path(); }
  const std::string& bin_path() const { return bin_.path(); }

 private:
  void parse_header();
  void validate_sizes_and_pointers();
  void validate_document_index();
  void check_sequence(size_t sequence) const;
  int32_t size_at(size_t i) const;
  int64_t pointer_at(size_t i) const;
  int64_t document_entry_at(size_t i) const;
  const uint8_t* sequence_bytes(size_t sequence) const;

  MappedFile idx_;
  MappedFile bin_;
  TokenDtype dtype_ = TokenDtype::kUInt16;
  size_t sequence_count_ = 0;
  size_t document_entries_ = 0;
  uint64_t total_tokens_ = 0;
  size_t sizes_offset_ = 0;
  size_t pointers_offset_ = 0;
  size_t documents_offset_ = 0;
};

template <typename T>
TokenSpan<T> IndexedDataset::sequence(size_t sequence) const {
  static_assert(std::is_same<T, uint16_t>::value || std::is_same<T, int32_t>::value,
                "tokens are uint16_t or int32_t");
  const TokenDtype wanted =
      std::is_same<T, uint16_t>::value ? TokenDtype::kUInt16 : TokenDtype::kInt32;
  if (wanted != dtype_) {
    throw std::logic_error(bin_path() + ": tokens are " + dtype_name(dtype_) + ", not " +
                           dtype_name(wanted));
  }
  check_sequence(sequence);
  // Pointers were checked to be multiples of the token size and the mapping
  // is page-aligned, so the cast is aligned.
  return TokenSpan<T>(reinterpret_cast<const T*>(sequence_bytes(sequence)),
                      size_t(size_at(sequence)));
}

}  // namespace cmpi::data
