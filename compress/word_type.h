// WordType: the element type of a buffer handed to a Communicator, without
// LibTorch: float32, or one of the two 16-bit floats (bf16, fp16) whose bit
// patterns travel as uint16_t words. The 16-bit types widen to float exactly
// and round back to nearest-even (compress/half_float.h, the same rounding as
// LibTorch's casts), so a codec on floats can carry 16-bit words: widen,
// encode, decode, round; a value that a lossless codec carries comes back as
// the same 16 bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "compress/half_float.h"

namespace cmpi::compress {

enum class WordType : uint8_t { kFloat32, kBFloat16, kFloat16 };
constexpr int kWordTypeCount = 3;

constexpr size_t word_bytes(WordType type) {
  return type == WordType::kFloat32 ? 4 : 2;
}

constexpr bool is_16_bit(WordType type) {
  return type != WordType::kFloat32;
}

constexpr const char* word_type_name(WordType type) {
  return type == WordType::kFloat32 ? "float32" : type == WordType::kBFloat16 ? "bf16" : "fp16";
}

// The word_type_name spelling (and "fp32", training.precision's word for
// float32) back to the type; std::nullopt for anything else.
inline std::optional<WordType> parse_word_type(const std::string& name) {
  if (name == "float32" || name == "fp32") return WordType::kFloat32;
  if (name == "bf16") return WordType::kBFloat16;
  if (name == "fp16") return WordType::kFloat16;
  return std::nullopt;
}

// The value of a 16-bit word as a float (exact).
inline float widen_word(uint16_t word, WordType type) {
  return type == WordType::kBFloat16 ? float_from_bf16(word) : float_from_fp16(word);
}

// A float rounded to the nearest 16-bit word of `type` (ties to even).
inline uint16_t round_to_word(float value, WordType type) {
  return type == WordType::kBFloat16 ? bf16_from_float(value) : fp16_from_float(value);
}

// out[i] = widen_word(in[i]) for n words.
inline void widen_words(const uint16_t* in, size_t n, WordType type, float* out) {
  if (type == WordType::kBFloat16)
    for (size_t i = 0; i < n; ++i) out[i] = float_from_bf16(in[i]);
  else
    for (size_t i = 0; i < n; ++i) out[i] = float_from_fp16(in[i]);
}

// out[i] = round_to_word(in[i]) for n floats.
inline void round_words(const float* in, size_t n, WordType type, uint16_t* out) {
  if (type == WordType::kBFloat16)
    for (size_t i = 0; i < n; ++i) out[i] = bf16_from_float(in[i]);
  else
    for (size_t i = 0; i < n; ++i) out[i] = fp16_from_float(in[i]);
}

}  // namespace cmpi::compress
