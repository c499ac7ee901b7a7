// Validation order follows the layout: magic, version, dtype, the two counts
// against the .idx length, sizes (non-negative, their byte total equal to the
// .bin length), pointers (each sequence starts exactly where the previous one
// ends, as Megatron and NeoX write them, and stays inside .bin), then the
// document index. Index fields are read with memcpy because the arrays start
// at byte 34 and are not aligned.
#include "data/indexed_dataset.h"

#include <limits>

namespace cmpi::data {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "indexed datasets are little-endian and are read in place");

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

std::string escaped(const uint8_t* p, size_t n) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\') {
      out += char(p[i]);
    } else {
      out += "\\x";
      out += hex[p[i] >> 4];
      out += hex[p[i] & 15];
    }
  }
  return out;
}

}  // namespace

IndexedDataset::IndexedDataset(const std::string& prefix)
    : idx_(prefix + ".idx"), bin_(prefix + ".bin") {
  parse_header();
  validate_sizes_and_pointers();
  validate_document_index();
}

void IndexedDataset::parse_header() {
  const std::string& path = idx_.path();
  const uint8_t* p = idx_.data();
  const size_t n = idx_.size();
  if (n < sizeof kIndexMagic || std::memcmp(p, kIndexMagic, sizeof kIndexMagic) != 0) {
    throw DatasetError(path, "magic",
                       "expected \"MMIDIDX\\x00\\x00\", found \"" +
                           escaped(p, std::min(n, sizeof kIndexMagic)) +
                           "\" (not a Megatron/NeoX mmap index)");
  }
  if (n < kIndexHeaderBytes) {
    throw DatasetError(path, "header",
                       "file is " + std::to_string(n) + " bytes, shorter than the " +
                           std::to_string(kIndexHeaderBytes) + "-byte header");
  }
  const uint64_t version = load<uint64_t>(p + 9);
  if (version != kIndexVersion) {
    throw DatasetError(path, "version",
                       "unsupported version " + std::to_string(version) + " (expected 1)");
  }
  const uint8_t code = p[17];
  if (code != uint8_t(TokenDtype::kUInt16) && code != uint8_t(TokenDtype::kInt32)) {
    throw DatasetError(path, "dtype",
                       "code " + describe_dtype_code(code) +
                           " is not a token dtype (expected 8 = uint16 or 4 = int32)");
  }
  dtype_ = TokenDtype(code);
  const uint64_t sequences = load<uint64_t>(p + 18);
  const uint64_t documents = load<uint64_t>(p + 26);
  const uint64_t room = n - kIndexHeaderBytes;
  if (sequences > room / 12) {
    throw DatasetError(path, "sequence count",
                       std::to_string(sequences) + " sequences need " +
                           (sequences > std::numeric_limits<uint64_t>::max() / 12
                                ? std::string("more than 2^64")
                                : std::to_string(sequences * 12)) +
                           " bytes of sizes and pointers, but only " + std::to_string(room) +
                           " bytes follow the header");
  }
  const uint64_t room_for_documents = room - sequences * 12;
  if (documents > room_for_documents / 8) {
    throw DatasetError(path, "document count",
                       std::to_string(documents) + " document index entries need more than the " +
                           std::to_string(room_for_documents) +
                           " bytes left after sizes and pointers");
  }
  if (documents * 8 != room_for_documents) {
    throw DatasetError(path, "document count",
                       std::to_string(room_for_documents - documents * 8) + " bytes follow the " +
                           std::to_string(documents) +
                           "-entry document index (counts and file length disagree)");
  }
  if (documents == 0) {
    throw DatasetError(path, "document count",
                       "0 entries; the document index holds at least its leading 0");
  }
  sequence_count_ = size_t(sequences);
  document_entries_ = size_t(documents);
  sizes_offset_ = kIndexHeaderBytes;
  pointers_offset_ = sizes_offset_ + 4 * sequence_count_;
  documents_offset_ = pointers_offset_ + 8 * sequence_count_;
}

void IndexedDataset::validate_sizes_and_pointers() {
  const std::string& path = idx_.path();
  const uint64_t token_bytes = dtype_bytes(dtype_);
  uint64_t total = 0;
  for (size_t i = 0; i < sequence_count_; ++i) {
    const int32_t size = size_at(i);
    if (size < 0) {
      throw DatasetError(
          path, "sizes",
          "sizes[" + std::to_string(i) + "] = " + std::to_string(size) + " is negative");
    }
    total += uint64_t(size);
    if (total > bin_.size() / token_bytes) break;  // already too large; avoids overflow
  }
  total_tokens_ = total;
  if (total > bin_.size() / token_bytes || total * token_bytes != bin_.size()) {
    throw DatasetError(bin_.path(), "size",
                       "file is " + std::to_string(bin_.size()) + " bytes but " + path +
                           " describes " + (total > bin_.size() / token_bytes ? "at least " : "") +
                           std::to_string(total) + " " + dtype_name(dtype_) +
                           " tokens (the sum of sizes; the pointers lay them out back to back)");
  }
  uint64_t expected = 0;  // where sequence i must start: the end of i-1
  for (size_t i = 0; i < sequence_count_; ++i) {
    const int64_t pointer = pointer_at(i);
    const uint64_t bytes = uint64_t(size_at(i)) * token_bytes;
    const std::string at = "pointers[" + std::to_string(i) + "] = " + std::to_string(pointer);
    if (pointer < 0 || uint64_t(pointer) < expected) {
      throw DatasetError(path, "pointers",
                         at + " is out of order: sequence " + std::to_string(i) +
                             " must start at byte " + std::to_string(expected) +
                             ", where the previous sequence ends");
    }
    if (uint64_t(pointer) > bin_.size() || bytes > bin_.size() - uint64_t(pointer)) {
      throw DatasetError(path, "pointers",
                         at + " with " + std::to_string(size_at(i)) +
                             " tokens is out of bounds of " + bin_.path() + " (" +
                             std::to_string(bin_.size()) + " bytes)");
    }
    if (uint64_t(pointer) != expected) {
      throw DatasetError(path, "pointers",
                         at + " leaves a gap: sequence " + std::to_string(i) +
                             " must start at byte " + std::to_string(expected));
    }
    expected += bytes;
  }
}

void IndexedDataset::validate_document_index() {
  const std::string& path = idx_.path();
  int64_t previous = 0;
  for (size_t d = 0; d < document_entries_; ++d) {
    const int64_t entry = document_entry_at(d);
    const std::string at = "document index[" + std::to_string(d) + "] = " + std::to_string(entry);
    if (d == 0 && entry != 0) throw DatasetError(path, "document index", at + ", expected 0");
    if (entry < previous) {
      throw DatasetError(path, "document index",
                         at + " is not monotone (previous entry " + std::to_string(previous) + ")");
    }
    if (uint64_t(entry) > sequence_count_) {
      throw DatasetError(
          path, "document index",
          at + " is out of range (" + std::to_string(sequence_count_) + " sequences)");
    }
    previous = entry;
  }
  if (uint64_t(previous) != sequence_count_) {
    throw DatasetError(path, "document index",
                       "last entry is " + std::to_string(previous) +
                           ", expected the sequence count " + std::to_string(sequence_count_));
  }
}

int32_t IndexedDataset::size_at(size_t i) const {
  return load<int32_t>(idx_.data() + sizes_offset_ + 4 * i);
}

int64_t IndexedDataset::pointer_at(size_t i) const {
  return load<int64_t>(idx_.data() + pointers_offset_ + 8 * i);
}

int64_t IndexedDataset::document_entry_at(size_t i) const {
  return load<int64_t>(idx_.data() + documents_offset_ + 8 * i);
}

void IndexedDataset::check_sequence(size_t sequence) const {
  if (sequence >= sequence_count_) {
    throw std::out_of_range(idx_.path() + ": sequence " + std::to_string(sequence) +
                            " out of range (" + std::to_string(sequence_count_) + " sequences)");
  }
}

const uint8_t* IndexedDataset::sequence_bytes(size_t sequence) const {
  return bin_.data() + pointer_at(sequence);
}

size_t IndexedDataset::sequence_length(size_t sequence) const {
  check_sequence(sequence);
  return size_t(size_at(sequence));
}

void IndexedDataset::copy_sequence(size_t sequence, std::vector<int32_t>& out) const {
  check_sequence(sequence);
  const size_t n = size_t(size_at(sequence));
  out.resize(n);
  if (dtype_ == TokenDtype::kInt32) {
    if (n) std::memcpy(out.data(), sequence_bytes(sequence), n * 4);
  } else {
    const uint16_t* tokens = reinterpret_cast<const uint16_t*>(sequence_bytes(sequence));
    for (size_t i = 0; i < n; ++i) out[i] = tokens[i];
  }
}

size_t IndexedDataset::document_begin(size_t document) const {
  if (document >= documents()) {
    throw std::out_of_range(idx_.path() + ": document " + std::to_string(document) +
                            " out of range (" + std::to_string(documents()) + " documents)");
  }
  return size_t(document_entry_at(document));
}

size_t IndexedDataset::document_end(size_t document) const {
  document_begin(document);  // range check
  return size_t(document_entry_at(document + 1));
}

void IndexedDataset::validate_tokens(uint64_t vocab_size) const {
  std::vector<int32_t> tokens;
  for (size_t s = 0; s < sequence_count_; ++s) {
    copy_sequence(s, tokens);
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (tokens[i] < 0 || uint64_t(tokens[i]) >= vocab_size) {
        throw DatasetError(bin_.path(), "tokens",
                           "sequence " + std::to_string(s) + " position " + std::to_string(i) +
                               ": token " + std::to_string(tokens[i]) +
                               " is outside the vocabulary [0, " + std::to_string(vocab_size) +
                               ")");
      }
    }
  }
}

}  // namespace cmpi::data
