// GPT-2's reversible map from bytes to printable code points, so that BPE
// vocabulary entries are plain strings without whitespace or control
// characters: the 188 bytes '!'..'~', U+00A1..U+00AC and U+00AE..U+00FF map
// to themselves, the other 68 bytes (controls, space, DEL, NBSP, soft hyphen,
// ...) map in increasing order to U+0100, U+0101, ... U+0143.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace cmpi::data {

class ByteToUnicode {
 public:
  ByteToUnicode();
  char32_t code_point(uint8_t byte) const { return code_points_[byte]; }
  // The UTF-8 encoding of code_point(byte), precomputed.
  const std::string& utf8(uint8_t byte) const { return utf8_[byte]; }
  // The byte a code point stands for, or nothing if it is not in the map.
  std::optional<uint8_t> byte(char32_t code_point) const;

 private:
  std::array<char32_t, 256> code_points_{};
  std::array<std::string, 256> utf8_;
  std::array<int16_t, 0x144> bytes_{};  // code point -> byte, -1 if unmapped
};

}  // namespace cmpi::data
