// The tokenizer that needs no files: token = byte value (0..255), and one
// extra id, 256, for end-of-document, so the vocabulary has 257 entries and
// no byte value is taken away from the text.
#pragma once

#include "data/tokenizer.h"

namespace cmpi::data {

class ByteTokenizer : public Tokenizer {
 public:
  static constexpr int32_t kEndOfDocument = 256;

  void encode(std::string_view text, std::vector<int32_t>& out) override;
  std::string decode(const std::vector<int32_t>& ids) const override;
  uint64_t vocab_size() const override { return 257; }
  int32_t end_of_document() const override { return kEndOfDocument; }
  std::unique_ptr<Tokenizer> clone() const override { return std::make_unique<ByteTokenizer>(); }
  std::string name() const override { return "bytes"; }
};

}  // namespace cmpi::data
