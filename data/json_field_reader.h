// Typed access to the members of a JsonValue tree read from a configuration
// file (a Hugging Face tokenizer.json), with every error naming the file and
// the field: "tokenizer.json: model.merges[3]: why". object() checks an
// object's keys against the keys the caller knows, so a setting the reader
// would ignore (and so act differently) is refused rather than skipped.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "data/json_value.h"

namespace cmpi::data {

class JsonFieldReader {
 public:
  using Kind = JsonValue::Kind;

  explicit JsonFieldReader(std::string path) : path_(std::move(path)) {}

  // Throws std::runtime_error "PATH: FIELD: why".
  [[noreturn]] void fail(const std::string& field, const std::string& why) const;

  const JsonValue& expect(const JsonValue& value, Kind kind, const std::string& field) const;
  // An object whose keys are all in `known`.
  const JsonValue& object(const JsonValue& value, const std::string& field,
                          std::initializer_list<const char*> known) const;
  // The member `key` of `object`, which must be there.
  const JsonValue& member(const JsonValue& object, const char* key, const std::string& field) const;
  // A boolean member, or `fallback` when it is absent or null.
  bool boolean(const JsonValue& object, const char* key, bool fallback,
               const std::string& field) const;
  // A string member, or `fallback` when it is absent or null.
  std::string string(const JsonValue& object, const char* key, const std::string& fallback,
                     const std::string& field) const;
  int64_t integer(const JsonValue& value, const std::string& field) const;
  // A token id: an integer in 0..INT32_MAX.
  int32_t id(const JsonValue& value, const std::string& field) const;
  // The "type" member of a component, or "" if it has none.
  std::string type(const JsonValue& value, const std::string& field) const;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// `s` in single quotes, as error messages cite values.
std::string quoted(const std::string& s);

}  // namespace cmpi::data
