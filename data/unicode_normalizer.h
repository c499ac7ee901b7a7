// Unicode normalization (NFC, NFD, NFKC, NFKD; UAX #15) of UTF-8 text that
// may hold bytes that are not UTF-8: each maximal well-formed run is
// normalized by ICU, and every other byte is kept as it is, so no input
// byte is lost (Hugging Face's normalizers see only valid UTF-8). Runs that
// are already normal, the common case, are copied without conversion.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "data/hf_tokenizer_file.h"

namespace cmpi::data {

class UnicodeNormalizer {
 public:
  // Applies `forms` in order; throws std::runtime_error if ICU lacks one.
  explicit UnicodeNormalizer(std::vector<UnicodeNormalForm> forms);
  bool empty() const { return forms_.empty(); }
  // `text` normalized by every form in turn.
  std::string normalize(std::string_view text) const;

 private:
  std::string normalize_once(UnicodeNormalForm form, std::string_view text) const;

  std::vector<UnicodeNormalForm> forms_;
};

}  // namespace cmpi::data
