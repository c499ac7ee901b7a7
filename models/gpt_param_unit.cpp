#include "models/gpt_param_unit.h"

#include <stdexcept>

namespace cmpi::models {

namespace {

bool starts_with(const std::string& text, const char* prefix) {
  return text.rfind(prefix, 0) == 0;
}

}  // namespace

std::string GptParamUnit::name() const {
  switch (kind) {
    case Kind::kBlock:
      return "block" + std::to_string(layer);
    case Kind::kHead:
      return "head";
    case Kind::kEmbedding:
      break;
  }
  return "embedding";
}

GptParamUnit gpt_param_unit(const std::string& param_name) {
  GptParamUnit unit;
  if (starts_with(param_name, "block")) {
    const size_t dot = param_name.find('.');
    const std::string digits =
        param_name.substr(5, dot == std::string::npos ? std::string::npos : dot - 5);
    if (digits.empty() || digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      throw std::invalid_argument("GPT parameter '" + param_name +
                                  "': a block's name must start with block<layer>.");
    unit.kind = GptParamUnit::Kind::kBlock;
    unit.layer = std::stoll(digits);
  } else if (starts_with(param_name, "final_norm") || starts_with(param_name, "output_head")) {
    unit.kind = GptParamUnit::Kind::kHead;
  }
  return unit;
}

}  // namespace cmpi::models
