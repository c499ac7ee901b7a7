#include "config/config_overrides.h"

#include <cctype>
#include <optional>
#include <vector>

namespace cmpi::config {
namespace {

// One step down the tree: a mapping key, or an index into a list.
struct Step {
  std::string key;
  std::optional<size_t> index;
  std::string path;  // the full path up to and including this step
};

bool is_key_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
}

std::vector<Step> parse_path(const std::string& path, const std::string& flag) {
  const auto bad = [&](const std::string& why) -> ConfigError {
    return ConfigError(flag + ": bad key path '" + path + "': " + why +
                       " (expected e.g. training.lr or compression.rules[0].codec)");
  };
  std::vector<Step> steps;
  size_t pos = 0;
  while (true) {
    const size_t start = pos;
    while (pos < path.size() && is_key_char(path[pos])) ++pos;
    if (pos == start) throw bad("empty or malformed key at position " + std::to_string(start));
    steps.push_back({path.substr(start, pos - start), std::nullopt, path.substr(0, pos)});
    while (pos < path.size() && path[pos] == '[') {
      const size_t digits = ++pos;
      while (pos < path.size() && std::isdigit(static_cast<unsigned char>(path[pos]))) ++pos;
      if (pos == digits || pos >= path.size() || path[pos] != ']' || pos - digits > 9)
        throw bad("expected [index] at position " + std::to_string(digits - 1));
      ++pos;
      steps.push_back(
          {"", size_t(std::stoul(path.substr(digits, pos - 1 - digits))), path.substr(0, pos)});
    }
    if (pos == path.size()) return steps;
    if (path[pos] != '.') throw bad("unexpected '" + std::string(1, path[pos]) + "'");
    ++pos;
  }
}

const char* kind_of(const YAML::Node& node) {
  if (node.IsScalar()) return "a single value";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  return "empty";
}

}  // namespace

void apply_override(YAML::Node& root, const std::string& text, ReadContext& context) {
  const std::string flag = "--set " + text;
  const size_t equals = text.find('=');
  if (equals == std::string::npos)
    throw ConfigError(flag + ": expected key.path=value (e.g. --set training.lr=0.01)");
  const std::string path = text.substr(0, equals);
  const std::string value_text = text.substr(equals + 1);
  const std::vector<Step> steps = parse_path(path, flag);
  if (value_text.find_first_not_of(" \t") == std::string::npos)
    throw ConfigError(flag + ": missing value after '='");

  YAML::Node value;
  try {
    value = YAML::Load(value_text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(flag + ": the value is not valid YAML: " + e.msg);
  }

  if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  std::string created;  // the shallowest path this override adds to the tree
  YAML::Node current;
  current.reset(root);
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& step = steps[i];
    const bool last = i + 1 == steps.size();
    const std::string parent = i == 0 ? std::string("the config") : steps[i - 1].path;
    if (step.index) {
      if (!current.IsSequence())
        throw ConfigError(flag + ": " + parent + " is " + kind_of(current) + ", not a list");
      if (*step.index >= current.size())
        throw ConfigError(flag + ": " + step.path + " does not exist (" + parent + " has " +
                          std::to_string(current.size()) + " items)");
      if (last) {
        context.add_replaced(path, context.where(step.path, current[*step.index]));
        current[*step.index] = value;
      } else
        current.reset(current[*step.index]);
      continue;
    }
    // A present but empty section (`log:`) becomes a mapping to write into.
    if (current.IsNull()) current = YAML::Node(YAML::NodeType::Map);
    if (!current.IsMap())
      throw ConfigError(flag + ": " + parent + " is " + kind_of(current) +
                        ", not a section with keys");
    if (!current[step.key].IsDefined()) {
      if (created.empty()) created = step.path;
      if (!last) current[step.key] = YAML::Node(YAML::NodeType::Map);
    }
    if (last) {
      const YAML::Node earlier = current[step.key];
      if (earlier.IsDefined() && !earlier.IsNull())
        context.add_replaced(path, context.where(path, earlier));
      current[step.key] = value;
    } else {
      current.reset(current[step.key]);
    }
  }
  context.add_override(path, created, text);
}

}  // namespace cmpi::config
