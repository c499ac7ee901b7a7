// A JSON document held as a tree, for files whose members come in any order
// and nest (a Hugging Face tokenizer.json). Parsing walks the text with
// JsonCursor, so the grammar, string escapes and error offsets are the same
// as for the streaming readers in json_reader.h. Numbers keep their text as
// well as their value, so a reader can insist on an integer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "data/json_reader.h"

namespace cmpi::data {

class JsonValue {
 public:
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };

  // Throws JsonError (with the byte offset) on malformed input or trailing
  // characters.
  static JsonValue parse(std::string_view text);

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::kNull; }
  bool boolean() const { return boolean_; }
  double number() const { return number_; }
  // A number that is whole and within +-2^53 (where a double still holds
  // every integer exactly) as an integer; nothing for any other value or
  // kind. Readers convert numbers to integers only through this: casting a
  // larger double (1e300, or the infinity "1e999" reads as) is undefined.
  std::optional<int64_t> exact_integer() const;
  // The number as written ("12", "0.0", "1e3"); a string's decoded value.
  const std::string& text() const { return text_; }
  const std::vector<JsonValue>& items() const { return items_; }
  // Members in file order; a repeated key appears twice.
  const std::vector<std::pair<std::string, JsonValue>>& members() const { return members_; }
  // The member `key` of an object (the last one if repeated), or nullptr.
  const JsonValue* find(std::string_view key) const;

  // "null", "a boolean", "a number", ... for error messages.
  static const char* kind_name(Kind kind);

 private:
  static JsonValue read(JsonCursor& cursor, std::string_view text, int depth);

  Kind kind_ = Kind::kNull;
  bool boolean_ = false;
  double number_ = 0;
  std::string text_;
  std::vector<JsonValue> items_;
  std::vector<std::pair<std::string, JsonValue>> members_;
};

}  // namespace cmpi::data
