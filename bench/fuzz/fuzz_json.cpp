// The hand-written JSON reader (data/json_reader.h, data/json_value.h) on
// arbitrary bytes: the tree parser, the JSONL record reader and the
// streaming cursor's integer and string reads. Each either succeeds or
// throws JsonError (with a byte offset inside the input).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "bench/fuzz/fuzz_check.h"
#include "data/json_reader.h"
#include "data/json_value.h"

using cmpi::data::JsonCursor;
using cmpi::data::JsonError;
using cmpi::data::JsonValue;

namespace {

void check_offset(const JsonError& e, size_t size) {
  if (e.offset() > size)
    cmpi::fuzz::defect("error offset " + std::to_string(e.offset()) + " beyond the " +
                       std::to_string(size) + "-byte input: " + e.what());
}

// Walks the tree so every accessor sees what the parser built.
size_t walk(const JsonValue& value) {
  size_t nodes = 1 + value.text().size();
  for (const auto& item : value.items()) nodes += walk(item);
  for (const auto& [key, member] : value.members()) {
    nodes += key.size() + walk(member);
    if (value.find(key) == nullptr) cmpi::fuzz::defect("find() misses member '" + key + "'");
  }
  return nodes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    walk(JsonValue::parse(text));
  } catch (const JsonError& e) {
    check_offset(e, size);
  }
  try {
    std::string field;
    cmpi::data::read_jsonl_text(text, field);
  } catch (const JsonError& e) {
    check_offset(e, size);
  }
  // An encoder.json-style object of string -> integer, read with the cursor.
  try {
    JsonCursor cursor(text);
    cursor.expect('{', "an object");
    while (!cursor.consume('}')) {
      cursor.read_string();
      cursor.expect(':', "':'");
      if (cursor.peek() == '"' || cursor.peek() == '-' ||
          (cursor.peek() >= '0' && cursor.peek() <= '9'))
        cursor.peek() == '"' ? (void)cursor.read_string() : (void)cursor.read_integer();
      else
        cursor.skip_value();
      if (!cursor.consume(',')) {
        cursor.expect('}', "'}'");
        break;
      }
    }
  } catch (const JsonError& e) {
    check_offset(e, size);
  }
  return 0;
}
