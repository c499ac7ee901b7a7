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
        if (size_t(id) < v.tokens_.size() && !v.tokens_[size_t(id)].empty()) {
          throw JsonError(cursor.offset(), "id " + std::to_string(id) + " used twice");
        }
        v.add_token(std::move(token), id, encoder_name);
      } while (cursor.consume(','));
      cursor.expect('}', "',' or '}'");
    }
    if (!cursor.at_end()) throw JsonError(cursor.offset(), "trailing characters");
  } catch (const JsonError& e) {
    throw std::runtime_error(encoder_name + ": " + e.what());
  }
  v.find_byte_tokens(encoder_name);

  std::istringstream lines(merges_text);
  std::string line;
  size_t line_number = 0;
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
    v.add_merge(line.substr(a, a_end - a), line.substr(b, b_end - b), where, encoder_name);
  }
  return v;
}

Gpt2Vocabulary Gpt2Vocabulary::from_tables(std::vector<std::pair<std::string, int32_t>> vocab,
                                           const std::vector<Gpt2MergeRule>& merges,
                                           const std::string& file_name,
                                           const std::string& vocab_field,
                                           const std::function<std::string(size_t)>& merge_field,
                                           bool byte_tokens) {
  Gpt2Vocabulary v;
  const std::string vocab_where = file_name + ": " + vocab_field;
  for (auto& [token, id] : vocab) {
    if (id < 0) {
      throw std::runtime_error(vocab_where + ": '" + token + "' has the negative id " +
                               std::to_string(id));
    }
    if (size_t(id) < v.tokens_.size() && !v.tokens_[size_t(id)].empty()) {
      throw std::runtime_error(vocab_where + ": id " + std::to_string(id) + " used by '" +
                               v.tokens_[size_t(id)] + "' and '" + token + "'");
    }
    v.add_token(std::move(token), id, vocab_where);
  }
  if (byte_tokens) v.find_byte_tokens(vocab_where);
  for (size_t i = 0; i < merges.size(); ++i) {
    v.add_merge(merges[i].left, merges[i].right, file_name + ": " + merge_field(i) + ": ",
                vocab_field);
  }
  return v;
}

void Gpt2Vocabulary::add_token(std::string token, int64_t id, const std::string& where) {
  if (id < 0 || id > INT32_MAX) {
    throw std::runtime_error(where + ": id " + std::to_string(id) + " out of range");
  }
  if (size_t(id) >= tokens_.size()) tokens_.resize(size_t(id) + 1);
  tokens_[size_t(id)] = token;
  ids_[std::move(token)] = int32_t(id);
}

void Gpt2Vocabulary::find_byte_tokens(const std::string& where) {
  for (int b = 0; b < 256; ++b) {
    const auto found = ids_.find(byte_map_.utf8(uint8_t(b)));
    if (found == ids_.end()) {
      throw std::runtime_error(where + ": no token for byte " + std::to_string(b) + " ('" +
                               byte_map_.utf8(uint8_t(b)) + "')");
    }
    byte_ids_[size_t(b)] = found->second;
  }
}

void Gpt2Vocabulary::add_merge(const std::string& left, const std::string& right,
                               const std::string& where, const std::string& vocab_label) {
  const auto left_id = id(left), right_id = id(right), merged_id = id(left + right);
  if (!left_id || !right_id || !merged_id) {
    throw std::runtime_error(where + "'" +
                             (!left_id    ? left
                              : !right_id ? right
                                          : left + right) +
                             "' is not in " + vocab_label);
  }
  merges_[pair_key(*left_id, *right_id)] = Gpt2Merge{next_rank_++, *merged_id};
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
