#include "config/config_layers.h"

#include <set>

namespace cmpi::config {
namespace {

std::string join_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

std::string line_of(const std::string& source, const YAML::Node& node) {
  return node.Mark().line >= 0 ? source + ":" + std::to_string(node.Mark().line + 1) : source;
}

void check_unique(const YAML::Node& node, const std::string& path, const std::string& source) {
  if (node.IsSequence()) {
    for (const YAML::Node& item : node) check_unique(item, path, source);
    return;
  }
  if (!node.IsMap()) return;
  std::map<std::string, YAML::Node> seen;
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (!it->first.IsScalar())
      throw ConfigError(line_of(source, it->first) + ": " + (path.empty() ? "" : path + ": ") +
                        "keys must be plain words");
    const std::string key = it->first.Scalar();
    const auto [first, fresh] = seen.emplace(key, it->first);
    if (!fresh)
      throw ConfigError(line_of(source, it->first) + ": " + join_path(path, key) +
                        ": key written twice (first at " + line_of(source, first->second) + ")");
    check_unique(it->second, join_path(path, key), source);
  }
}

// Where `layer` wrote `path`: its recorded place, or its ancestor's (a
// built tree records the keys it set), else "" (the node's own line).
std::string written_at(const ConfigLayer& layer, std::string path) {
  while (true) {
    const auto it = layer.written_at.find(path);
    if (it != layer.written_at.end()) return it->second;
    const size_t dot = path.rfind('.');
    if (dot == std::string::npos) return "";
    path.resize(dot);
  }
}

void merge_into(YAML::Node into, const YAML::Node& from, const std::string& path,
                const ConfigLayer& layer, ReadContext& context) {
  for (auto it = from.begin(); it != from.end(); ++it) {
    const std::string key = it->first.Scalar();
    const std::string key_path = join_path(path, key);
    const YAML::Node value = it->second;
    YAML::Node existing = into[key];
    const bool had = existing.IsDefined() && !existing.IsNull();
    if (had && existing.IsMap() && value.IsMap()) {
      merge_into(existing, value, key_path, layer, context);
      continue;
    }
    if (had && existing.IsMap() && value.IsNull()) continue;  // `model:` alone adds nothing
    if (had) context.add_replaced(key_path, context.where(key_path, existing));
    // The later file's own key node goes in (not one made from the text), so
    // that an error about the key names its line.
    if (existing.IsDefined()) into.remove(key);
    into.force_insert(it->first, value);
    context.add_layer(key_path, layer.source, written_at(layer, key_path));
  }
}

}  // namespace

void check_unique_keys(const YAML::Node& tree, const std::string& source) {
  check_unique(tree, "", source);
}

YAML::Node merge_layers(const std::vector<ConfigLayer>& layers, ReadContext& context) {
  if (layers.empty()) return YAML::Node(YAML::NodeType::Map);
  YAML::Node root = layers.front().tree;
  // A built first tree names its keys' places as later ones do.
  for (const auto& [path, where] : layers.front().written_at)
    context.add_layer(path, layers.front().source, where);
  for (size_t i = 1; i < layers.size(); ++i) {
    const ConfigLayer& layer = layers[i];
    if (!layer.tree.IsMap())
      throw ConfigError(line_of(layer.source, layer.tree) +
                        ": expected a mapping of config sections (run:, model:, ...) to merge "
                        "over " +
                        layers.front().source);
    if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
    if (!root.IsMap()) return root;  // the reader refuses the first file, naming it
    merge_into(root, layer.tree, "", layer, context);
  }
  return root;
}

}  // namespace cmpi::config
