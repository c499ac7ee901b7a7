// The small part of JSON (RFC 8259) this library reads: GPT-2's encoder.json
// (one object of string -> integer) and JSONL records (an object whose
// "text" member is a string; other members are skipped whatever they hold).
// A cursor walks the bytes; errors carry the byte offset where parsing
// stopped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace cmpi::data {

class JsonError : public std::runtime_error {
 public:
  JsonError(size_t offset, const std::string& what)
      : std::runtime_error(what + " at byte " + std::to_string(offset)), offset_(offset) {}
  size_t offset() const { return offset_; }

 private:
  size_t offset_;
};

class JsonCursor {
 public:
  explicit JsonCursor(std::string_view text) : text_(text) {}

  void skip_whitespace();
  // True and consumes c if the next non-blank byte is c.
  bool consume(char c);
  void expect(char c, const char* what);
  bool at_end();
  // The next value's first byte (after whitespace), or 0 at the end.
  char peek();
  // A string value, escapes decoded to UTF-8 (surrogate pairs joined).
  std::string read_string();
  // An integer value (no fraction or exponent), within int64.
  int64_t read_integer();
  // Skips any value; nesting deeper than 512 is an error.
  void skip_value(int depth = 0);
  size_t offset() const { return at_; }

 private:
  [[noreturn]] void fail(const std::string& what) const;
  uint32_t read_hex4();

  std::string_view text_;
  size_t at_ = 0;
};

// What a JSONL line's "text" member looked like.
enum class JsonTextField { kFound, kMissing, kNotAString };

// Parses one JSONL record (a whole line) into `text`. Throws JsonError if the
// line is not one JSON object; reports a missing or non-string "text" member
// by return value so the caller can word the error.
JsonTextField read_jsonl_text(std::string_view line, std::string& text);

}  // namespace cmpi::data
