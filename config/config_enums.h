// The config's closed choices as types: each enum with the one table of its
// YAML spellings, read by MapReader::read_choice and written back by
// name_of. Nothing outside config/ compares these as strings; code switches
// on the enum and prints name_of(value) where a user reads it.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace cmpi::config {

// One spelling of an enum value in a config file.
template <class Enum>
struct EnumSpelling {
  Enum value;
  const char* name;
};

// The model family a run trains (model.kind): which section keys apply and
// which family in models/family/ validates, sizes and builds it.
enum class ModelFamily { kGpt, kResnet };
inline constexpr EnumSpelling<ModelFamily> kModelFamilySpellings[] = {
    {ModelFamily::kGpt, "gpt"}, {ModelFamily::kResnet, "resnet"}};

// training.precision: the dtype of forward and backward (masters stay fp32).
enum class Precision { kFp32, kBf16, kFp16 };
inline constexpr EnumSpelling<Precision> kPrecisionSpellings[] = {
    {Precision::kFp32, "fp32"}, {Precision::kBf16, "bf16"}, {Precision::kFp16, "fp16"}};

// Bytes of one activation or compute-dtype value under `precision`.
inline int value_bytes(Precision precision) {
  return precision == Precision::kFp32 ? 4 : 2;
}

// parallel.schedule: the pipeline's order of forwards and backwards.
enum class PipelineSchedule { kGpipe, kOneFOneB };
inline constexpr EnumSpelling<PipelineSchedule> kPipelineScheduleSpellings[] = {
    {PipelineSchedule::kGpipe, "gpipe"}, {PipelineSchedule::kOneFOneB, "1f1b"}};

// data.kind: where the training samples come from.
enum class DataKind { kMarkov, kIndexed, kImages };
inline constexpr EnumSpelling<DataKind> kDataKindSpellings[] = {
    {DataKind::kMarkov, "markov"}, {DataKind::kIndexed, "indexed"}, {DataKind::kImages, "images"}};

// model.norm: the GPT's normalisation layers (LayerNorm with bias, or
// RMSNorm: a scale only, Llama's).
enum class Normalization { kLayerNorm, kRmsNorm };
inline constexpr EnumSpelling<Normalization> kNormalizationSpellings[] = {
    {Normalization::kLayerNorm, "layernorm"}, {Normalization::kRmsNorm, "rmsnorm"}};

// run.device: where the model's tensors live. auto: a CUDA device where one
// is visible to the rank, else the CPU (trainer/device_choice.h).
enum class RunDevice { kCpu, kCuda, kAuto };
inline constexpr EnumSpelling<RunDevice> kRunDeviceSpellings[] = {
    {RunDevice::kCpu, "cpu"}, {RunDevice::kCuda, "cuda"}, {RunDevice::kAuto, "auto"}};

// model.attention_backend: the attention core's kernel (models/gpt_options.h).
enum class AttentionBackend { kAuto, kFused, kUnfused };
inline constexpr EnumSpelling<AttentionBackend> kAttentionBackendSpellings[] = {
    {AttentionBackend::kAuto, "auto"},
    {AttentionBackend::kFused, "fused"},
    {AttentionBackend::kUnfused, "unfused"}};

template <class Enum, size_t N>
const char* spelling_of(Enum value, const EnumSpelling<Enum> (&spellings)[N]) {
  for (const auto& s : spellings)
    if (s.value == value) return s.name;
  throw std::logic_error("an enum value without a spelling");
}

// The value spelled `name` (std::invalid_argument naming `what` and the
// spellings otherwise): for code that holds a choice as text, such as a
// test's table of variants.
template <class Enum, size_t N>
Enum value_named(const std::string& name, const EnumSpelling<Enum> (&spellings)[N],
                 const char* what) {
  std::string known;
  for (const auto& s : spellings) {
    if (name == s.name) return s.value;
    known += (known.empty() ? "" : ", ") + std::string(s.name);
  }
  throw std::invalid_argument(std::string(what) + ": unknown '" + name + "' (known: " + known +
                              ")");
}
inline Precision precision_named(const std::string& name) {
  return value_named(name, kPrecisionSpellings, "training.precision");
}

// The YAML spelling of each value, for messages and for writing the config back.
inline const char* name_of(ModelFamily v) {
  return spelling_of(v, kModelFamilySpellings);
}
inline const char* name_of(Precision v) {
  return spelling_of(v, kPrecisionSpellings);
}
inline const char* name_of(PipelineSchedule v) {
  return spelling_of(v, kPipelineScheduleSpellings);
}
inline const char* name_of(Normalization v) {
  return spelling_of(v, kNormalizationSpellings);
}
inline const char* name_of(AttentionBackend v) {
  return spelling_of(v, kAttentionBackendSpellings);
}
inline const char* name_of(RunDevice v) {
  return spelling_of(v, kRunDeviceSpellings);
}
inline const char* name_of(DataKind v) {
  return spelling_of(v, kDataKindSpellings);
}

}  // namespace cmpi::config
