// The dtype table of indexed_dataset_format.h as functions.
#include "data/indexed_dataset_format.h"

namespace cmpi::data {

size_t dtype_bytes(TokenDtype dtype) {
  return dtype == TokenDtype::kUInt16 ? 2 : 4;
}

const char* dtype_name(TokenDtype dtype) {
  return dtype == TokenDtype::kUInt16 ? "uint16" : "int32";
}

uint64_t dtype_max_token(TokenDtype dtype) {
  return dtype == TokenDtype::kUInt16 ? 65535u : 2147483647u;
}

TokenDtype parse_dtype(const std::string& name) {
  if (name == "uint16") return TokenDtype::kUInt16;
  if (name == "int32") return TokenDtype::kInt32;
  throw std::invalid_argument("unknown token dtype '" + name + "' (expected uint16 or int32)");
}

std::string describe_dtype_code(uint8_t code) {
  switch (code) {
    case 1:
      return "1 (uint8, not a token type here)";
    case 2:
      return "2 (int8, not a token type here)";
    case 3:
      return "3 (int16, not a token type here)";
    case 4:
      return "4 (int32)";
    case 5:
      return "5 (int64, not a token type here)";
    case 6:
      return "6 (a float type: float64 in Megatron-LM, float32 in GPT-NeoX; never tokens)";
    case 7:
      return "7 (a float type: float32 in Megatron-LM, float64 in GPT-NeoX; never tokens)";
    case 8:
      return "8 (uint16)";
    default:
      return std::to_string(code) + " (unknown code)";
  }
}

}  // namespace cmpi::data
