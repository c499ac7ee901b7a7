// cmpi-data's work: documents from DocumentReader -> tokenizer -> indexed
// dataset, end-of-document token after each document. Three kinds of thread:
// one reader cuts the input into batches (~1 MiB of text), `workers` threads
// tokenize batches with their own tokenizer clone, and the calling thread
// writes finished batches strictly in input order. At most 4 x workers
// batches are in flight, so memory stays bounded however far the workers
// run ahead. The first error in any thread stops all of them and is rethrown;
// the builder then removes its temporary files.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "data/document_reader.h"
#include "data/indexed_dataset_format.h"
#include "data/tokenizer.h"

namespace cmpi::data {

struct ConversionOptions {
  std::vector<std::string> inputs;
  InputFormat format = InputFormat::kAuto;
  TextDocuments text_documents = TextDocuments::kFile;
  std::string output_prefix;
  // Unset: uint16 when the vocabulary fits in it, else int32.
  std::optional<TokenDtype> dtype;
  int workers = 1;
  // Seconds between progress lines; <= 0 disables them.
  double progress_interval_s = 1.0;
};

struct ConversionReport {
  uint64_t documents = 0;
  uint64_t tokens = 0;       // end-of-document tokens included
  uint64_t input_bytes = 0;  // document text bytes
  double seconds = 0;
  TokenDtype dtype = TokenDtype::kUInt16;
  double tokens_per_second() const { return seconds > 0 ? double(tokens) / seconds : 0; }
};

// The dtype ConversionOptions::dtype defaults to for a vocabulary size.
TokenDtype default_dtype(uint64_t vocab_size);

// Progress lines go to `progress` (nullptr: none).
ConversionReport convert_to_indexed_dataset(const ConversionOptions& options,
                                            const Tokenizer& tokenizer, std::ostream* progress);

}  // namespace cmpi::data
