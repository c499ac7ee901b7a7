// The mapping table from GPT-NeoX's config keys to this project's: what a
// NeoX YAML file (neox_config.h) may hold and what each key becomes. One
// table serves the translator, the "unknown key" and "ignored keys"
// messages, and the key table in docs/config.md (neox_keys_markdown; a test
// holds the docs to it).
//
// NeoX writes a key with hyphens or underscores alike (`num-layers`,
// `num_layers`); the table holds the spelling NeoX's own configs use and
// lookups treat `-` and `_` as the same character.
#pragma once

#include <string>
#include <vector>

namespace cmpi::config {

enum class NeoxUse {
  kCopy,     // the value as written, into `target` (its checks apply)
  kConvert,  // converted into `target` as `note` says
  kCheck,    // sets no key here; checked against the others as `note` says
  kIgnore,   // no meaning here: named in the one warning a file gets
};

struct NeoxKey {
  const char* name;  // as GPT-NeoX's configs write it
  NeoxUse use;
  const char* target;  // this project's key(s) it sets ("" for none)
  const char* note;    // how the value is read, or why it does not matter here
};

// Every GPT-NeoX key this project reads or knows to ignore.
const std::vector<NeoxKey>& neox_keys();

// `-` and `_` made the same ("num-layers" -> "num_layers").
std::string neox_normalized(const std::string& key);

// The table's entry for `key` as a user wrote it, or nullptr.
const NeoxKey* find_neox_key(const std::string& key);

// The table as the Markdown rows docs/config.md holds (header included).
std::string neox_keys_markdown();

}  // namespace cmpi::config
