#include "trainer/yaml_reader.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace cmpi::trainer {
namespace {

bool is_descendant(const std::string& path, const std::string& ancestor) {
  return path.size() > ancestor.size() && path.compare(0, ancestor.size(), ancestor) == 0 &&
         (path[ancestor.size()] == '.' || path[ancestor.size()] == '[');
}

bool is_quoted(const YAML::Node& node) {
  return node.IsScalar() && node.Tag() == "!";
}

// What a value is, for "expected X, got Y".
std::string describe(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "nothing (an empty value)";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  const std::string& text = node.Scalar();
  if (is_quoted(node)) return "the quoted string \"" + text + "\"";
  if (parse_real(text)) return text;
  return "\"" + text + "\"";
}

std::string number_text(double value) {
  return format_real(value);
}

std::string describe_range(const IntRange& range) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (range.min == 1 && range.max == kMax) return "a positive integer";
  if (range.min == 0 && range.max == kMax) return "a non-negative integer";
  if (range.min == kMin && range.max == kMax) return "an integer";
  if (range.max == kMax) return "an integer >= " + std::to_string(range.min);
  if (range.min == kMin) return "an integer <= " + std::to_string(range.max);
  return "an integer in [" + std::to_string(range.min) + ", " + std::to_string(range.max) + "]";
}

std::string describe_range(const RealRange& range) {
  const bool has_min = range.min != -std::numeric_limits<double>::max();
  const bool has_max = range.max != std::numeric_limits<double>::max();
  if (has_min && has_max)
    return std::string("a number in ") + (range.min_open ? "(" : "[") + number_text(range.min) +
           ", " + number_text(range.max) + (range.max_open ? ")" : "]");
  if (has_min)
    return std::string("a number ") + (range.min_open ? "> " : ">= ") + number_text(range.min);
  if (has_max)
    return std::string("a number ") + (range.max_open ? "< " : "<= ") + number_text(range.max);
  return "a number";
}

bool in_range(double value, const RealRange& range) {
  if (range.min_open ? !(value > range.min) : !(value >= range.min)) return false;
  if (range.max_open ? !(value < range.max) : !(value <= range.max)) return false;
  return true;
}

std::optional<bool> parse_bool(const std::string& text) {
  static const char* const kTrue[] = {"true", "True", "TRUE", "yes", "Yes",
                                      "YES",  "on",   "On",   "ON"};
  static const char* const kFalse[] = {"false", "False", "FALSE", "no", "No",
                                       "NO",    "off",   "Off",   "OFF"};
  for (const char* word : kTrue)
    if (text == word) return true;
  for (const char* word : kFalse)
    if (text == word) return false;
  return std::nullopt;
}

std::string lower(std::string text) {
  for (char& c : text) c = char(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// Optimal string alignment distance: Levenshtein plus adjacent transpositions,
// so "modle" is one edit from "model".
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min(
          {d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

const char* const kSizeUnitsText =
    "B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024)";

// ---------------------------------------------------------------- ReadContext

void ReadContext::add_override(std::string path, std::string created, std::string text) {
  overrides_.push_back({std::move(path), std::move(created), std::move(text)});
}

const ReadContext::Override* ReadContext::override_for(const std::string& path) const {
  // The last override touching the path wins, as it does in the tree.
  for (auto it = overrides_.rbegin(); it != overrides_.rend(); ++it) {
    if (path == it->path || is_descendant(path, it->path)) return &*it;
    if (!it->created.empty() && (path == it->created || is_descendant(path, it->created)))
      return &*it;
  }
  return nullptr;
}

std::string ReadContext::where(const std::string& path, const YAML::Node& node) const {
  if (const Override* o = override_for(path)) return "--set " + o->text;
  if (node.IsDefined() && node.Mark().line >= 0)
    return file_ + ":" + std::to_string(node.Mark().line + 1);
  return file_;
}

void ReadContext::fail(const std::string& path, const YAML::Node& node,
                       const std::string& why) const {
  throw ConfigError(where(path, node) + ": " + (path.empty() ? "" : path + ": ") + why);
}

void ReadContext::record(const std::string& path, const std::string& location) {
  locations_[path] = location;
}

// ------------------------------------------------------------------ MapReader

MapReader::MapReader(const YAML::Node& node, std::string path, ReadContext& context)
    : node_(node), path_(std::move(path)), context_(context) {
  if (!node_.IsDefined() || node_.IsNull()) return;
  if (!node_.IsMap())
    context_.fail(path_, node_, "expected a mapping of keys to values, got " + describe(node_));
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    if (!it->first.IsScalar())
      context_.fail(path_, it->first, "keys must be plain words, got " + describe(it->first));
    entries_.push_back({it->first.Scalar(), it->first, it->second});
  }
}

std::string MapReader::key_path(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

const MapReader::Entry* MapReader::find(const std::string& key) const {
  for (const Entry& entry : entries_)
    if (entry.key == key) return &entry;
  return nullptr;
}

bool MapReader::has(const std::string& key) const {
  return find(key) != nullptr;
}

const MapReader::Entry* MapReader::consume(const std::string& key) {
  if (std::find(known_.begin(), known_.end(), key) == known_.end()) known_.push_back(key);
  const Entry* entry = find(key);
  if (entry) context_.record(key_path(key), where(key));
  return entry;
}

std::string MapReader::where(const std::string& key) const {
  const Entry* entry = find(key);
  if (!entry) return context_.where(key_path(key), node_);
  // A null value has no useful position of its own; its key does.
  const bool value_placed = entry->value.IsDefined() && !entry->value.IsNull();
  return context_.where(key_path(key), value_placed ? entry->value : entry->key_node);
}

void MapReader::fail(const std::string& key, const std::string& why) const {
  throw ConfigError(where(key) + ": " + key_path(key) + ": " + why);
}

std::string MapReader::scalar_of(const Entry& entry, const std::string& expected) const {
  if (!entry.value.IsScalar())
    fail(entry.key, "expected " + expected + ", got " + describe(entry.value));
  return entry.value.Scalar();
}

void MapReader::read(const std::string& key, int64_t& out, IntRange range) {
  const Entry* entry = consume(key);
  if (!entry) return;
  const std::string expected = describe_range(range);
  const std::string text = scalar_of(*entry, expected);
  const std::optional<int64_t> value = is_quoted(entry->value) ? std::nullopt : parse_integer(text);
  if (!value || *value < range.min || *value > range.max)
    fail(key, "expected " + expected + ", got " + describe(entry->value));
  out = *value;
}

void MapReader::read(const std::string& key, uint64_t& out) {
  const Entry* entry = consume(key);
  if (!entry) return;
  const std::string expected = "a non-negative integer";
  const std::string text = scalar_of(*entry, expected);
  const bool digits_only =
      !text.empty() && text.size() <= 20 &&
      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  errno = 0;
  const unsigned long long value = digits_only ? std::strtoull(text.c_str(), nullptr, 10) : 0;
  if (!digits_only || errno == ERANGE || is_quoted(entry->value))
    fail(key, "expected " + expected + ", got " + describe(entry->value));
  out = value;
}

void MapReader::read(const std::string& key, double& out, RealRange range) {
  const Entry* entry = consume(key);
  if (!entry) return;
  const std::string expected = describe_range(range);
  const std::string text = scalar_of(*entry, expected);
  const std::optional<double> value = is_quoted(entry->value) ? std::nullopt : parse_real(text);
  if (!value || !in_range(*value, range))
    fail(key, "expected " + expected + ", got " + describe(entry->value));
  out = *value;
}

void MapReader::read(const std::string& key, bool& out) {
  const Entry* entry = consume(key);
  if (!entry) return;
  const std::string expected = "true or false";
  const std::optional<bool> value =
      is_quoted(entry->value) ? std::nullopt : parse_bool(scalar_of(*entry, expected));
  if (!value) fail(key, "expected " + expected + ", got " + describe(entry->value));
  out = *value;
}

void MapReader::read(const std::string& key, std::string& out,
                     const std::vector<std::string>& choices, bool allow_empty) {
  const Entry* entry = consume(key);
  if (!entry) return;
  const std::string expected = choices.empty() ? "a string" : "one of " + join_words(choices);
  if (entry->value.IsNull() && allow_empty) {
    out.clear();
    return;
  }
  std::string text = scalar_of(*entry, expected);
  if (text.empty() && !allow_empty) fail(key, "expected " + expected + ", got an empty string");
  if (!choices.empty() && std::find(choices.begin(), choices.end(), text) == choices.end()) {
    std::string why = "expected " + expected + ", got " + describe(entry->value);
    if (auto guess = closest_word(text, choices)) why += " (did you mean " + *guess + "?)";
    fail(key, why);
  }
  out = std::move(text);
}

void MapReader::read_or_auto(const std::string& key, int64_t& out, IntRange range,
                             int64_t auto_value) {
  const Entry* entry = consume(key);
  if (!entry) return;
  const std::string expected = "auto or " + describe_range(range);
  const std::string text = scalar_of(*entry, expected);
  if (text == "auto" && !is_quoted(entry->value)) {
    out = auto_value;
    return;
  }
  const std::optional<int64_t> value = is_quoted(entry->value) ? std::nullopt : parse_integer(text);
  if (!value || *value < range.min || *value > range.max)
    fail(key, "expected " + expected + ", got " + describe(entry->value));
  out = *value;
}

void MapReader::read_size(const std::string& key, int64_t& out, int64_t min_bytes) {
  const Entry* entry = consume(key);
  if (!entry) return;
  std::string expected = min_bytes == 1   ? "a positive size"
                         : min_bytes == 0 ? "a non-negative size"
                                          : "a size >= " + std::to_string(min_bytes);
  expected += " (bytes, or a number with a unit: " + std::string(kSizeUnitsText) + ")";
  const std::optional<int64_t> value = parse_size(scalar_of(*entry, expected));
  if (!value || *value < min_bytes)
    fail(key, "expected " + expected + ", got " + describe(entry->value));
  out = *value;
}

std::vector<std::string> MapReader::read_words(const std::string& key) {
  const Entry* entry = consume(key);
  if (!entry) return {};
  const std::string expected = "a word or a list of words";
  if (entry->value.IsScalar()) return {entry->value.Scalar()};
  if (!entry->value.IsSequence())
    fail(key, "expected " + expected + ", got " + describe(entry->value));
  if (entry->value.size() == 0)
    fail(key, "expected " + expected + ", got an empty list (leave the key out to match any)");
  std::vector<std::string> words;
  for (const YAML::Node& item : entry->value) {
    if (!item.IsScalar())
      context_.fail(key_path(key), item, "list items must be words, got " + describe(item));
    words.push_back(item.Scalar());
  }
  return words;
}

YAML::Node MapReader::take(const std::string& key) {
  const Entry* entry = consume(key);
  return entry ? entry->value : YAML::Node();
}

MapReader MapReader::section(const std::string& key) {
  const Entry* entry = consume(key);
  return MapReader(entry ? entry->value : YAML::Node(), key_path(key), context_);
}

void MapReader::finish() const {
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& entry = entries_[i];
    const std::string path = key_path(entry.key);
    for (size_t j = 0; j < i; ++j) {
      if (entries_[j].key != entry.key) continue;
      context_.fail(
          path, entry.key_node,
          "key written twice (first at " + context_.where(path, entries_[j].key_node) + ")");
    }
    if (std::find(known_.begin(), known_.end(), entry.key) != known_.end()) continue;
    std::string why = "unknown key";
    if (auto guess = closest_word(entry.key, known_))
      why += " (did you mean " + key_path(*guess) + "?)";
    else
      why += " (known keys" + (path_.empty() ? std::string() : " in " + path_) + ": " +
             join_words(known_) + ")";
    context_.fail(path, entry.key_node, why);
  }
}

// -------------------------------------------------------------------- parsers

std::optional<int64_t> parse_integer(const std::string& text) {
  size_t start = (!text.empty() && (text[0] == '+' || text[0] == '-')) ? 1 : 0;
  if (start == text.size()) return std::nullopt;
  for (size_t i = start; i < text.size(); ++i)
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
  errno = 0;
  const long long value = std::strtoll(text.c_str(), nullptr, 10);
  if (errno == ERANGE) return std::nullopt;
  return int64_t(value);
}

std::optional<double> parse_real(const std::string& text) {
  // Only decimal notation: strtod would also take "nan", "inf" and hex floats.
  bool has_digit = false;
  for (char c : text) {
    if (c >= '0' && c <= '9')
      has_digit = true;
    else if (c != '+' && c != '-' && c != '.' && c != 'e' && c != 'E')
      return std::nullopt;
  }
  if (!has_digit) return std::nullopt;
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(begin, &end);
  if (end != begin + text.size() || errno == ERANGE || !std::isfinite(value)) return std::nullopt;
  return value;
}

std::optional<int64_t> parse_size(const std::string& text) {
  size_t pos = 0;
  __int128 whole = 0;
  size_t whole_digits = 0;
  for (; pos < text.size() && text[pos] >= '0' && text[pos] <= '9'; ++pos, ++whole_digits) {
    whole = whole * 10 + (text[pos] - '0');
    if (whole > std::numeric_limits<int64_t>::max()) return std::nullopt;
  }
  __int128 fraction = 0, fraction_scale = 1;
  if (pos < text.size() && text[pos] == '.') {
    for (++pos; pos < text.size() && text[pos] >= '0' && text[pos] <= '9'; ++pos) {
      if (fraction_scale >= __int128(1000000000000000000LL)) return std::nullopt;
      fraction = fraction * 10 + (text[pos] - '0');
      fraction_scale *= 10;
    }
    if (fraction_scale == 1) return std::nullopt;  // "64." is not a number
  }
  if (whole_digits == 0) return std::nullopt;
  while (pos < text.size() && text[pos] == ' ') ++pos;
  const std::string unit = text.substr(pos);
  static const std::pair<const char*, int64_t> kUnits[] = {
      {"", 1},
      {"B", 1},
      {"KB", 1000},
      {"kB", 1000},
      {"MB", 1000 * 1000},
      {"GB", 1000LL * 1000 * 1000},
      {"TB", 1000LL * 1000 * 1000 * 1000},
      {"KiB", 1LL << 10},
      {"MiB", 1LL << 20},
      {"GiB", 1LL << 30},
      {"TiB", 1LL << 40},
  };
  for (const auto& [name, multiplier] : kUnits) {
    if (unit != name) continue;
    const __int128 fraction_bytes = fraction * multiplier;
    if (fraction_bytes % fraction_scale != 0) return std::nullopt;  // not whole bytes
    const __int128 bytes = whole * multiplier + fraction_bytes / fraction_scale;
    if (bytes > std::numeric_limits<int64_t>::max()) return std::nullopt;
    return int64_t(bytes);
  }
  return std::nullopt;
}

std::string format_size(int64_t bytes) {
  static const std::pair<const char*, int64_t> kUnits[] = {{"TiB", int64_t(1) << 40},
                                                           {"GiB", int64_t(1) << 30},
                                                           {"MiB", int64_t(1) << 20},
                                                           {"KiB", int64_t(1) << 10},
                                                           {"TB", 1000LL * 1000 * 1000 * 1000},
                                                           {"GB", 1000LL * 1000 * 1000},
                                                           {"MB", 1000 * 1000},
                                                           {"KB", 1000}};
  for (const auto& [name, unit] : kUnits)
    if (bytes > 0 && bytes % unit == 0) return std::to_string(bytes / unit) + name;
  return std::to_string(bytes);
}

std::string format_real(double value) {
  char buffer[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof buffer, "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value) break;
  }
  return buffer;
}

std::optional<std::string> closest_word(const std::string& word,
                                        const std::vector<std::string>& candidates) {
  // Short words are too close to each other for more than one edit to mean a typo.
  const size_t allowed =
      word.size() <= 3 ? 1 : std::max<size_t>(2, std::min<size_t>(3, word.size() / 3));
  std::optional<std::string> best;
  size_t best_distance = allowed + 1;
  for (const std::string& candidate : candidates) {
    const size_t distance = edit_distance(lower(word), lower(candidate));
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

std::string join_words(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& word : words) out += (out.empty() ? "" : ", ") + word;
  return out;
}

std::string unknown_word_message(const std::string& what, const std::string& word,
                                 const std::vector<std::string>& known) {
  std::string message = "unknown " + what + " '" + word + "' (known: " + join_words(known);
  if (auto guess = closest_word(word, known)) message += "; did you mean " + *guess + "?";
  return message + ")";
}

}  // namespace cmpi::trainer
