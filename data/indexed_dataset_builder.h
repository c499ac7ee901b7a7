// Writes an indexed dataset (layout in indexed_dataset_format.h) the way
// Megatron-LM's builder does: tokens stream to PREFIX.bin as they come, the
// sizes and document boundaries stay in memory (12 bytes per sequence) and
// PREFIX.idx is written by finalize(). Both files are written under
// temporary names (PREFIX.bin.tmp, PREFIX.idx.tmp) and renamed only after
// every write, fsync and close succeeded, so a crash or an error never leaves
// a half-written dataset under the final names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/checked_file_writer.h"
#include "data/indexed_dataset_format.h"

namespace cmpi::data {

class IndexedDatasetBuilder {
 public:
  IndexedDatasetBuilder(std::string prefix, TokenDtype dtype);
  // Removes the temporary files unless finalize() succeeded.
  ~IndexedDatasetBuilder();
  IndexedDatasetBuilder(const IndexedDatasetBuilder&) = delete;
  IndexedDatasetBuilder& operator=(const IndexedDatasetBuilder&) = delete;

  // Appends one sequence to the current document. Throws std::out_of_range
  // for a token the dtype cannot hold (negative, or > 65535 for uint16).
  void add_sequence(const int32_t* tokens, size_t count);
  // Closes the current document (it may hold any number of sequences).
  void end_document();
  // add_sequence + end_document: the usual one-sequence document.
  void add_document(const std::vector<int32_t>& tokens);

  // Writes PREFIX.idx and renames both files into place. A document still
  // open (sequences after the last end_document) is closed first.
  void finalize();

  uint64_t sequences() const { return sizes_.size(); }
  uint64_t documents() const { return document_index_.size() - 1; }
  uint64_t tokens() const { return tokens_; }
  uint64_t bin_bytes() const { return bin_->bytes_written(); }

 private:
  std::string prefix_;
  TokenDtype dtype_;
  std::unique_ptr<CheckedFileWriter> bin_;
  std::vector<int32_t> sizes_;
  std::vector<int64_t> document_index_{0};
  std::vector<uint8_t> scratch_;
  uint64_t tokens_ = 0;
  bool finalized_ = false;
};

}  // namespace cmpi::data
