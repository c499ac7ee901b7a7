// Strict, typed reading of YAML mappings for the run config.
//
// A MapReader wraps one mapping (a config section) and hands out its values
// as typed fields. Every key the code asks for, present or not, is recorded as
// known; finish() then rejects whatever the file holds beyond those, with a
// "did you mean" hint. Scalars are parsed here rather than by yaml-cpp's
// as<T>() so that "8.5" for an integer, "eight" for a number, a list for a
// scalar or a quoted "8" for an integer are all errors, and so that every
// error reads `file:line: section.key: what was expected, got what`.
//
// A ReadContext knows the file name and what was written into the tree on
// top of it: later `--config` files and `--set` overrides. A value that came
// from `--set key=value` is reported as coming from that flag, one from a
// later file as that file's line, not as a line of the first file. It also
// records where each key was written (and what each replaced), so later
// checks (the layout against the world size) and --print-config can name it.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "config/config_enums.h"
#include "config/units.h"

namespace cmpi::config {

// A config that cannot be used; the message names the file, line and key.
class ConfigError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

class ReadContext {
 public:
  explicit ReadContext(std::string file) : file_(std::move(file)) {}

  const std::string& file() const { return file_; }

  // `path` was set by `--set text`; `created` is the shallowest path the
  // override added to the tree (empty if it only replaced an existing value).
  void add_override(std::string path, std::string created, std::string text);
  // `path` (and all below it) was set by the later config file `file`;
  // `written_at` names the place when the tree was built rather than parsed
  // (a GPT-NeoX key: "20B.yml:12 (num-layers)"), empty: the node's own line
  // in `file`.
  void add_layer(std::string path, std::string file, std::string written_at);
  // The value at `path` replaced one written at `earlier` (another file, or
  // the file under a --set).
  void add_replaced(const std::string& path, std::string earlier);
  const std::map<std::string, std::vector<std::string>>& replaced() const { return replaced_; }

  // "configs/x.yaml:14", "--set training.lr=0.01" or, for a node without a
  // position, the file alone.
  std::string where(const std::string& path, const YAML::Node& node) const;

  [[noreturn]] void fail(const std::string& path, const YAML::Node& node,
                         const std::string& why) const;

  // Key path -> where() of every key read from the tree.
  void record(const std::string& path, const std::string& location);
  const std::map<std::string, std::string>& locations() const { return locations_; }

 private:
  // What a later file or a --set wrote at `path` (and below, and at
  // `created` and below): `where`, or with `where` empty the node's line in
  // `file`.
  struct Layer {
    std::string path, created, file, where;
  };
  const Layer* layer_for(const std::string& path) const;

  std::string file_;
  std::vector<Layer> layers_;
  std::map<std::string, std::string> locations_;
  std::map<std::string, std::vector<std::string>> replaced_;
};

// Closed integer range; the defaults accept any int64.
struct IntRange {
  int64_t min = std::numeric_limits<int64_t>::min();
  int64_t max = std::numeric_limits<int64_t>::max();
};
inline IntRange positive() {
  return {1, std::numeric_limits<int64_t>::max()};
}
inline IntRange non_negative() {
  return {0, std::numeric_limits<int64_t>::max()};
}

// Real range; open ends exclude the bound. The defaults accept any finite number.
struct RealRange {
  double min = -std::numeric_limits<double>::max();
  double max = std::numeric_limits<double>::max();
  bool min_open = false;
  bool max_open = false;
};

class MapReader {
 public:
  // `node` must be a mapping; an undefined or null node reads as an empty one.
  MapReader(const YAML::Node& node, std::string path, ReadContext& context);

  const std::string& path() const { return path_; }
  ReadContext& context() const { return context_; }
  std::string key_path(const std::string& key) const;
  bool has(const std::string& key) const;

  void read(const std::string& key, int64_t& out, IntRange range = {});
  void read(const std::string& key, uint64_t& out);
  void read(const std::string& key, double& out, RealRange range = {});
  void read(const std::string& key, bool& out);
  // `choices` empty: any string (non-empty unless allow_empty).
  void read(const std::string& key, std::string& out, const std::vector<std::string>& choices = {},
            bool allow_empty = false);
  // One of an enum's spellings (config_enums.h); `out` keeps its default
  // when the key is absent.
  template <class Enum, size_t N>
  void read_choice(const std::string& key, Enum& out, const EnumSpelling<Enum> (&spellings)[N]) {
    std::vector<std::string> choices;
    for (const auto& s : spellings) choices.push_back(s.name);
    std::string text = spelling_of(out, spellings);
    read(key, text, choices);
    for (const auto& s : spellings)
      if (text == s.name) out = s.value;
  }
  // `auto` (stored as auto_value) or an integer in range.
  void read_or_auto(const std::string& key, int64_t& out, IntRange range, int64_t auto_value);
  void read_or_auto(const std::string& key, double& out, RealRange range, double auto_value);
  // A byte count: 65536, 64KiB, 1.5MiB, 25MB (see parse_size()).
  void read_size(const std::string& key, int64_t& out, int64_t min_bytes = 1);
  // A word or a list of words ("dp" or "[tp, pp]"); empty if the key is absent.
  std::vector<std::string> read_words(const std::string& key);

  // The raw value (undefined if absent), marked as consumed; for values with
  // their own shape (lists of rules, `auto` or a number).
  YAML::Node take(const std::string& key);
  // A nested mapping; absent or null reads as empty.
  MapReader section(const std::string& key);

  // Throws for keys present but never asked for, and for duplicated keys.
  void finish() const;

  [[noreturn]] void fail(const std::string& key, const std::string& why) const;
  // "file:line" of the key (or of this mapping if the key is absent).
  std::string where(const std::string& key) const;

 private:
  struct Entry {
    std::string key;
    YAML::Node key_node;
    YAML::Node value;
  };
  const Entry* find(const std::string& key) const;
  const Entry* consume(const std::string& key);
  // The scalar text of a present key, or an error naming what it was instead.
  std::string scalar_of(const Entry& entry, const std::string& expected) const;
  // The two read_or_auto overloads (yaml_reader.cpp).
  template <class T, class Range, class Parse, class Fits>
  void read_number_or_auto(const std::string& key, T& out, Range range, T auto_value, Parse parse,
                           Fits fits);

  YAML::Node node_;
  std::string path_;
  ReadContext& context_;
  std::vector<Entry> entries_;
  std::vector<std::string> known_;
};

}  // namespace cmpi::config
