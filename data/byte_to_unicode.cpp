// Builds the table the way GPT-2's bytes_to_unicode() defines it: printable
// bytes keep their value, the rest take 256 + n in byte order.
#include "data/byte_to_unicode.h"

#include "data/utf8.h"

namespace cmpi::data {
namespace {

bool keeps_its_value(int b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

}  // namespace

ByteToUnicode::ByteToUnicode() {
  bytes_.fill(-1);
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const char32_t cp = keeps_its_value(b) ? char32_t(b) : next++;
    code_points_[b] = cp;
    bytes_[cp] = int16_t(b);
    append_utf8(cp, utf8_[b]);
  }
}

std::optional<uint8_t> ByteToUnicode::byte(char32_t code_point) const {
  if (code_point >= bytes_.size() || bytes_[code_point] < 0) return std::nullopt;
  return uint8_t(bytes_[code_point]);
}

}  // namespace cmpi::data
