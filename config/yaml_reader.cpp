#include "config/yaml_reader.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace cmpi::config {
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

}  // namespace

// ---------------------------------------------------------------- ReadContext

void ReadContext::add_override(std::string path, std::string created, std::string text) {
  layers_.push_back({std::move(path), std::move(created), file_, "--set " + std::move(text)});
}

void ReadContext::add_layer(std::string path, std::string file, std::string written_at) {
  layers_.push_back({path, std::move(path), std::move(file), std::move(written_at)});
}

void ReadContext::add_replaced(const std::string& path, std::string earlier) {
  replaced_[path].push_back(std::move(earlier));
}

const ReadContext::Layer* ReadContext::layer_for(const std::string& path) const {
  // The last layer touching the path wins, as it does in the tree.
  for (auto it = layers_.rbegin(); it != layers_.rend(); ++it) {
    if (path == it->path || is_descendant(path, it->path)) return &*it;
    if (!it->created.empty() && (path == it->created || is_descendant(path, it->created)))
      return &*it;
  }
  return nullptr;
}

std::string ReadContext::where(const std::string& path, const YAML::Node& node) const {
  const Layer* layer = layer_for(path);
  if (layer && !layer->where.empty()) return layer->where;
  const std::string& file = layer ? layer->file : file_;
  if (node.IsDefined() && node.Mark().line >= 0)
    return file + ":" + std::to_string(node.Mark().line + 1);
  return file;
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

// `auto` (unquoted) or a number `parse` reads that `fits` the range.
template <class T, class Range, class Parse, class Fits>
void MapReader::read_number_or_auto(const std::string& key, T& out, Range range, T auto_value,
                                    Parse parse, Fits fits) {
  const Entry* entry = consume(key);
  if (!entry) return;
  const std::string expected = "auto or " + describe_range(range);
  const std::string text = scalar_of(*entry, expected);
  if (text == "auto" && !is_quoted(entry->value)) {
    out = auto_value;
    return;
  }
  const std::optional<T> value = is_quoted(entry->value) ? std::nullopt : parse(text);
  if (!value || !fits(*value, range))
    fail(key, "expected " + expected + ", got " + describe(entry->value));
  out = *value;
}

void MapReader::read_or_auto(const std::string& key, int64_t& out, IntRange range,
                             int64_t auto_value) {
  read_number_or_auto(key, out, range, auto_value, parse_integer,
                      [](int64_t v, IntRange r) { return v >= r.min && v <= r.max; });
}

void MapReader::read_or_auto(const std::string& key, double& out, RealRange range,
                             double auto_value) {
  read_number_or_auto(key, out, range, auto_value, parse_real,
                      [](double v, RealRange r) { return in_range(v, r); });
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

}  // namespace cmpi::config
