// Each byte is its own id; decoding drops the end-of-document id.
#include "data/byte_tokenizer.h"

#include <stdexcept>

namespace cmpi::data {

void ByteTokenizer::encode(std::string_view text, std::vector<int32_t>& out) {
  out.reserve(out.size() + text.size());
  for (const char c : text) out.push_back(int32_t(uint8_t(c)));
}

std::string ByteTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  out.reserve(ids.size());
  for (const int32_t id : ids) {
    if (id == kEndOfDocument) continue;
    if (id < 0 || id > 255) throw std::out_of_range("byte tokenizer: id " + std::to_string(id));
    out += char(id);
  }
  return out;
}

}  // namespace cmpi::data
