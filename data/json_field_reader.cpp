// Each accessor checks the JSON kind before reading, so a wrong kind is an
// error naming the field rather than a silent default.
#include "data/json_field_reader.h"

#include <stdexcept>

namespace cmpi::data {

void JsonFieldReader::fail(const std::string& field, const std::string& why) const {
  throw std::runtime_error(path_ + ": " + field + ": " + why);
}

const JsonValue& JsonFieldReader::expect(const JsonValue& value, Kind kind,
                                         const std::string& field) const {
  if (value.kind() != kind) {
    fail(field, std::string("expected ") + JsonValue::kind_name(kind) + ", found " +
                    JsonValue::kind_name(value.kind()));
  }
  return value;
}

const JsonValue& JsonFieldReader::object(const JsonValue& value, const std::string& field,
                                         std::initializer_list<const char*> known) const {
  expect(value, Kind::kObject, field);
  for (const auto& [key, member] : value.members()) {
    bool listed = false;
    for (const char* k : known) listed = listed || key == k;
    if (!listed) fail(field + "." + key, "is not a setting this reader knows; refused");
  }
  return value;
}

const JsonValue& JsonFieldReader::member(const JsonValue& object, const char* key,
                                         const std::string& field) const {
  const JsonValue* v = object.find(key);
  if (!v) fail(field + "." + key, "missing");
  return *v;
}

bool JsonFieldReader::boolean(const JsonValue& object, const char* key, bool fallback,
                              const std::string& field) const {
  const JsonValue* v = object.find(key);
  if (!v || v->is_null()) return fallback;
  return expect(*v, Kind::kBool, field + "." + key).boolean();
}

std::string JsonFieldReader::string(const JsonValue& object, const char* key,
                                    const std::string& fallback, const std::string& field) const {
  const JsonValue* v = object.find(key);
  if (!v || v->is_null()) return fallback;
  return expect(*v, Kind::kString, field + "." + key).text();
}

int64_t JsonFieldReader::integer(const JsonValue& value, const std::string& field) const {
  expect(value, Kind::kNumber, field);
  const std::string& t = value.text();
  for (size_t i = t[0] == '-' ? 1 : 0; i < t.size(); ++i) {
    if (t[i] < '0' || t[i] > '9') fail(field, "expected an integer, found " + t);
  }
  if (t.size() > 12) fail(field, "integer out of range: " + t);
  return std::stoll(t);
}

int32_t JsonFieldReader::id(const JsonValue& value, const std::string& field) const {
  const int64_t v = integer(value, field);
  if (v < 0 || v > INT32_MAX) fail(field, "id " + std::to_string(v) + " out of range");
  return int32_t(v);
}

std::string JsonFieldReader::type(const JsonValue& value, const std::string& field) const {
  expect(value, Kind::kObject, field);
  const JsonValue* t = value.find("type");
  if (!t) return "";
  return expect(*t, Kind::kString, field + ".type").text();
}

std::string quoted(const std::string& s) {
  return "'" + s + "'";
}

}  // namespace cmpi::data
