// A Hugging Face config.json (hf/hf_config_reader.h, hf/hf_model_config.h):
// turned into a model section as cmpi-generate does, and, if that works,
// checked against that section as an import does (the two must agree: a
// config.json read into a model section describes that section). A refusal
// is a std::runtime_error naming the file.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "bench/fuzz/fuzz_check.h"
#include "data/json_value.h"
#include "hf/hf_config_reader.h"
#include "hf/hf_model_config.h"

using cmpi::data::JsonValue;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  JsonValue json;
  try {
    json = JsonValue::parse(text);
  } catch (const cmpi::data::JsonError&) {
    return 0;  // the JSON reader has its own target
  }
  cmpi::config::ModelConfig model;
  try {
    model = cmpi::hf::model_config_from_hf(json, cmpi::fuzz::kLabel);
  } catch (const std::runtime_error& e) {
    cmpi::fuzz::require_labelled(e.what());
    return 0;
  }
  try {
    cmpi::hf::check_hf_config(json, model, cmpi::fuzz::kLabel);
  } catch (const std::runtime_error& e) {
    cmpi::fuzz::require_labelled(e.what());
  }
  return 0;
}
