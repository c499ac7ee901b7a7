// encoder.json is parsed with JsonCursor; merge lines are split at their one
// separating space run. A pair listed twice keeps its last rank, as GPT-2's
// dict(zip(merges, range(...))) does.
#include "data/gpt2_vocabulary.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "data/json_reader.h"

namespace cmpi::data {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) throw std::runtime_error(path + ": read error");
  return s.str();
}

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

}  // namespace

Gpt2Vocabulary Gpt2Vocabulary::load(const std::string& encoder_path,
                                    const std::string& merges_path) {
  return parse(read_file(encoder_path), encoder_path, read_file(merges_path), merges_path);
}

Gpt2Vocabulary Gpt2Vocabulary::parse(const std::string& encoder_json,
                                     const std::string& encoder_name,
                                     const std::string& merges_text,
                                     const std::string& merges_name) {
  Gpt2Vocabulary v;
  try {
    JsonCursor cursor(encoder_json);
    cursor.expect('{', "a JSON object of token -> id");
    if (!cursor.consume('}')) {
      do {
        std::string token = cursor.read_string();
        cursor.expect(':', "':' after a token");
        const int64_t id = cursor.read_integer();
        if (id < 0 || id > INT32_MAX) throw JsonError(cursor.offset(), "id out of range");
        if (size_t(id) >= v.tokens_.size()) v.tokens_.resize(size_t(id) + 1);
        if (!v.tokens_[size_t(id)].empty()) {
          throw JsonError(cursor.offset(), "id " + std::to_string(id) + " used twice");
        }
        v.tokens_[size_t(id)] = token;
        v.ids_[std::move(token)] = int32_t(id);
      } while (cursor.consume(','));
      cursor.expect('}', "',' or '}'");
    }
    if (!cursor.at_end()) throw JsonError(cursor.offset(), "trailing characters");
  } catch (const JsonError& e) {
    throw std::runtime_error(encoder_name + ": " + e.what());
  }
  for (int b = 0; b < 256; ++b) {
    const auto found = v.ids_.find(v.byte_map_.utf8(uint8_t(b)));
    if (found == v.ids_.end()) {
      throw std::runtime_error(encoder_name + ": no token for byte " + std::to_string(b) + " ('" +
                               v.byte_map_.utf8(uint8_t(b)) + "')");
    }
    v.byte_ids_[size_t(b)] = found->second;
  }

  std::istringstream lines(merges_text);
  std::string line;
  size_t line_number = 0;
  int32_t rank = 0;
  while (std::getline(lines, line)) {
    ++line_number;
    if (line_number == 1 && line.rfind("#version", 0) == 0) continue;
    size_t a = 0;
    while (a < line.size() && is_blank(line[a])) ++a;
    if (a == line.size()) continue;
    size_t a_end = a;
    while (a_end < line.size() && !is_blank(line[a_end])) ++a_end;
    size_t b = a_end;
    while (b < line.size() && is_blank(line[b])) ++b;
    size_t b_end = b;
    while (b_end < line.size() && !is_blank(line[b_end])) ++b_end;
    size_t rest = b_end;
    while (rest < line.size() && is_blank(line[rest])) ++rest;
    const std::string where = merges_name + ":" + std::to_string(line_number) + ": ";
    if (b == b_end || rest != line.size()) {
      throw std::runtime_error(where + "expected two tokens separated by a space");
    }
    const std::string left = line.substr(a, a_end - a), right = line.substr(b, b_end - b);
    const auto left_id = v.id(left), right_id = v.id(right), merged_id = v.id(left + right);
    if (!left_id || !right_id || !merged_id) {
      throw std::runtime_error(where + "'" +
                               (!left_id    ? left
                                : !right_id ? right
                                            : left + right) +
                               "' is not in " + encoder_name);
    }
    v.merges_[pair_key(*left_id, *right_id)] = Gpt2Merge{rank++, *merged_id};
  }
  return v;
}

const Gpt2Merge* Gpt2Vocabulary::merge(int32_t left, int32_t right) const {
  const auto found = merges_.find(pair_key(left, right));
  return found == merges_.end() ? nullptr : &found->second;
}

std::optional<int32_t> Gpt2Vocabulary::id(const std::string& token) const {
  const auto found = ids_.find(token);
  if (found == ids_.end()) return std::nullopt;
  return found->second;
}

}  // namespace cmpi::data
