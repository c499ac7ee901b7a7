// The two sides of a config section's field list: FieldReader takes each key
// from a MapReader (types, ranges, choices checked), FieldWriter emits it for
// the resolved config.yaml. A section lists its keys once, in a template that
// both run (config_sections.cpp), so a key cannot be read without being
// written back or written in another order than it is listed.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/units.h"
#include "config/yaml_reader.h"

namespace cmpi::config {

class FieldReader {
 public:
  explicit FieldReader(MapReader& reader) : r_(reader) {}

  void integer(const char* key, int64_t& value, IntRange range = {}) { r_.read(key, value, range); }
  void integer_or_auto(const char* key, int64_t& value, IntRange range, int64_t auto_value) {
    r_.read_or_auto(key, value, range, auto_value);
  }
  void unsigned_integer(const char* key, uint64_t& value) { r_.read(key, value); }
  void real(const char* key, double& value, RealRange range = {}) { r_.read(key, value, range); }
  void real_or_auto(const char* key, double& value, RealRange range, double auto_value) {
    r_.read_or_auto(key, value, range, auto_value);
  }
  void flag(const char* key, bool& value) { r_.read(key, value); }
  // A byte count written as a size ("25MiB").
  void size(const char* key, int64_t& value) { r_.read_size(key, value); }
  // Free text (non-empty unless may_be_empty).
  void text(const char* key, std::string& value, bool may_be_empty = false) {
    r_.read(key, value, {}, may_be_empty);
  }
  // One of a few words kept as text.
  void word(const char* key, std::string& value, const std::vector<std::string>& choices) {
    r_.read(key, value, choices);
  }
  template <class Enum, size_t N>
  void choice(const char* key, Enum& value, const EnumSpelling<Enum> (&spellings)[N]) {
    r_.read_choice(key, value, spellings);
  }
  // A path or a list of paths.
  void paths(const char* key, std::vector<std::string>& value);
  // A list of numbers >= 0; absent keeps `value`.
  void ratios(const char* key, std::vector<double>& value);
  // parallel.pipeline_balance and its older spelling parallel.stage_layers.
  void pipeline_balance(ParallelConfig& parallel);

 private:
  MapReader& r_;
};

class FieldWriter {
 public:
  explicit FieldWriter(YAML::Emitter& out) : out_(out) {}

  void integer(const char* key, int64_t value, IntRange = {}) { put(key, std::to_string(value)); }
  void integer_or_auto(const char* key, int64_t value, IntRange, int64_t auto_value) {
    put(key, value == auto_value ? std::string("auto") : std::to_string(value));
  }
  void unsigned_integer(const char* key, uint64_t value) { put(key, std::to_string(value)); }
  void real(const char* key, double value, RealRange = {}) { put(key, format_real(value)); }
  void real_or_auto(const char* key, double value, RealRange, double auto_value) {
    put(key, value == auto_value ? std::string("auto") : format_real(value));
  }
  void flag(const char* key, bool value) { out_ << YAML::Key << key << YAML::Value << value; }
  void size(const char* key, int64_t value) { put(key, format_size(value)); }
  void text(const char* key, const std::string& value, bool = false) { put(key, value); }
  void word(const char* key, const std::string& value, const std::vector<std::string>&) {
    put(key, value);
  }
  template <class Enum, size_t N>
  void choice(const char* key, Enum value, const EnumSpelling<Enum> (&spellings)[N]) {
    put(key, spelling_of(value, spellings));
  }
  void paths(const char* key, const std::vector<std::string>& value);
  void ratios(const char* key, const std::vector<double>& value);
  void pipeline_balance(const ParallelConfig& parallel);

 private:
  void put(const char* key, const std::string& value) {
    out_ << YAML::Key << key << YAML::Value << value;
  }
  YAML::Emitter& out_;
};

}  // namespace cmpi::config
