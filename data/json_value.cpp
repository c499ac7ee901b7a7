// Recursive descent: the first byte of each value picks its kind; numbers
// are validated by JsonCursor::skip_value and then converted from the text
// it stepped over.
#include "data/json_value.h"

#include <cmath>
#include <cstdlib>

namespace cmpi::data {

JsonValue JsonValue::parse(std::string_view text) {
  JsonCursor cursor(text);
  JsonValue root = read(cursor, text, 0);
  if (!cursor.at_end()) throw JsonError(cursor.offset(), "trailing characters after the value");
  return root;
}

JsonValue JsonValue::read(JsonCursor& cursor, std::string_view text, int depth) {
  if (depth > 512) throw JsonError(cursor.offset(), "nesting too deep");
  JsonValue value;
  const char c = cursor.peek();
  if (c == '"') {
    value.kind_ = Kind::kString;
    value.text_ = cursor.read_string();
  } else if (c == '{') {
    value.kind_ = Kind::kObject;
    cursor.expect('{', "'{'");
    if (!cursor.consume('}')) {
      do {
        std::string key = cursor.read_string();
        cursor.expect(':', "':' after an object key");
        value.members_.emplace_back(std::move(key), read(cursor, text, depth + 1));
      } while (cursor.consume(','));
      cursor.expect('}', "',' or '}' in an object");
    }
  } else if (c == '[') {
    value.kind_ = Kind::kArray;
    cursor.expect('[', "'['");
    if (!cursor.consume(']')) {
      do {
        value.items_.push_back(read(cursor, text, depth + 1));
      } while (cursor.consume(','));
      cursor.expect(']', "',' or ']' in an array");
    }
  } else if (c == 't' || c == 'f' || c == 'n') {
    const size_t from = cursor.offset();
    cursor.skip_value();
    const std::string_view word = text.substr(from, cursor.offset() - from);
    value.kind_ = word == "null" ? Kind::kNull : Kind::kBool;
    value.boolean_ = word == "true";
  } else {
    // skip_value validates the number (or rejects whatever else is here).
    const size_t from = cursor.offset();
    cursor.skip_value();
    value.kind_ = Kind::kNumber;
    value.text_ = std::string(text.substr(from, cursor.offset() - from));
    value.number_ = std::strtod(value.text_.c_str(), nullptr);
  }
  return value;
}

std::optional<int64_t> JsonValue::exact_integer() const {
  constexpr double kLimit = 9007199254740992.0;  // 2^53
  if (kind_ != Kind::kNumber || !(std::fabs(number_) <= kLimit) || number_ != std::floor(number_))
    return std::nullopt;
  return int64_t(number_);
}

const JsonValue* JsonValue::find(std::string_view key) const {
  const JsonValue* found = nullptr;
  for (const auto& [name, member] : members_) {
    if (name == key) found = &member;
  }
  return found;
}

const char* JsonValue::kind_name(Kind kind) {
  switch (kind) {
    case Kind::kNull:
      return "null";
    case Kind::kBool:
      return "a boolean";
    case Kind::kNumber:
      return "a number";
    case Kind::kString:
      return "a string";
    case Kind::kArray:
      return "an array";
    case Kind::kObject:
      return "an object";
  }
  return "?";
}

}  // namespace cmpi::data
