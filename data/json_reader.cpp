// Recursive descent over the JSON grammar; strings are copied while their
// escapes are decoded, values that are not needed are only validated.
#include "data/json_reader.h"

#include "data/utf8.h"

namespace cmpi::data {

void JsonCursor::fail(const std::string& what) const {
  throw JsonError(at_, what);
}

void JsonCursor::skip_whitespace() {
  while (at_ < text_.size() &&
         (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\n' || text_[at_] == '\r')) {
    ++at_;
  }
}

bool JsonCursor::at_end() {
  skip_whitespace();
  return at_ == text_.size();
}

char JsonCursor::peek() {
  skip_whitespace();
  return at_ < text_.size() ? text_[at_] : '\0';
}

bool JsonCursor::consume(char c) {
  if (peek() != c || at_ == text_.size()) return false;
  ++at_;
  return true;
}

void JsonCursor::expect(char c, const char* what) {
  if (!consume(c)) fail(std::string("expected ") + what);
}

uint32_t JsonCursor::read_hex4() {
  if (text_.size() - at_ < 4) fail("truncated \\u escape");
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    const char c = text_[at_++];
    v <<= 4;
    if (c >= '0' && c <= '9') {
      v |= uint32_t(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      v |= uint32_t(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      v |= uint32_t(c - 'A' + 10);
    } else {
      fail("bad hex digit in \\u escape");
    }
  }
  return v;
}

std::string JsonCursor::read_string() {
  if (peek() != '"') fail("expected a string");
  ++at_;
  std::string out;
  while (true) {
    if (at_ >= text_.size()) fail("unterminated string");
    const char c = text_[at_++];
    if (c == '"') return out;
    if (uint8_t(c) < 0x20) fail("control character in string");
    if (c != '\\') {
      out += c;
      continue;
    }
    if (at_ >= text_.size()) fail("unterminated escape");
    const char e = text_[at_++];
    switch (e) {
      case '"':
        out += '"';
        break;
      case '\\':
        out += '\\';
        break;
      case '/':
        out += '/';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        uint32_t cp = read_hex4();
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (text_.substr(at_, 2) != "\\u") fail("high surrogate without its low half");
          at_ += 2;
          const uint32_t low = read_hex4();
          if (low < 0xDC00 || low > 0xDFFF) fail("high surrogate without its low half");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          fail("lone low surrogate");
        }
        append_utf8(char32_t(cp), out);
        break;
      }
      default:
        fail(std::string("unknown escape \\") + e);
    }
  }
}

int64_t JsonCursor::read_integer() {
  skip_whitespace();
  const bool negative = at_ < text_.size() && text_[at_] == '-';
  if (negative) ++at_;
  if (at_ >= text_.size() || text_[at_] < '0' || text_[at_] > '9') fail("expected an integer");
  int64_t v = 0;
  while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') {
    if (v > (INT64_MAX - 9) / 10) fail("integer out of range");
    v = v * 10 + (text_[at_++] - '0');
  }
  if (at_ < text_.size() && (text_[at_] == '.' || text_[at_] == 'e' || text_[at_] == 'E')) {
    fail("expected an integer, found a fraction or exponent");
  }
  return negative ? -v : v;
}

void JsonCursor::skip_value(int depth) {
  if (depth > 512) fail("nesting too deep");
  const char c = peek();
  if (c == '"') {
    read_string();
  } else if (c == '{') {
    ++at_;
    if (consume('}')) return;
    do {
      read_string();
      expect(':', "':' after an object key");
      skip_value(depth + 1);
    } while (consume(','));
    expect('}', "',' or '}' in an object");
  } else if (c == '[') {
    ++at_;
    if (consume(']')) return;
    do {
      skip_value(depth + 1);
    } while (consume(','));
    expect(']', "',' or ']' in an array");
  } else if (c == '-' || (c >= '0' && c <= '9')) {
    if (text_[at_] == '-') ++at_;
    const auto digits = [&] {
      const size_t from = at_;
      while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') ++at_;
      if (at_ == from) fail("malformed number");
    };
    digits();
    if (at_ < text_.size() && text_[at_] == '.') ++at_, digits();
    if (at_ < text_.size() && (text_[at_] == 'e' || text_[at_] == 'E')) {
      ++at_;
      if (at_ < text_.size() && (text_[at_] == '+' || text_[at_] == '-')) ++at_;
      digits();
    }
  } else {
    for (const char* word : {"true", "false", "null"}) {
      if (text_.substr(at_, std::char_traits<char>::length(word)) == word) {
        at_ += std::char_traits<char>::length(word);
        return;
      }
    }
    fail(c ? "unexpected character" : "unexpected end of input");
  }
}

JsonTextField read_jsonl_text(std::string_view line, std::string& text) {
  JsonCursor cursor(line);
  if (cursor.peek() != '{') throw JsonError(cursor.offset(), "expected a JSON object");
  cursor.expect('{', "'{'");
  JsonTextField result = JsonTextField::kMissing;
  if (!cursor.consume('}')) {
    do {
      const std::string key = cursor.read_string();
      cursor.expect(':', "':' after an object key");
      // A repeated "text" key: the last one counts, as in Python's json.
      if (key == "text" && cursor.peek() == '"') {
        text = cursor.read_string();
        result = JsonTextField::kFound;
      } else {
        if (key == "text") result = JsonTextField::kNotAString;
        cursor.skip_value();
      }
    } while (cursor.consume(','));
    cursor.expect('}', "',' or '}' in an object");
  }
  if (!cursor.at_end()) throw JsonError(cursor.offset(), "trailing characters after the object");
  return result;
}

}  // namespace cmpi::data
