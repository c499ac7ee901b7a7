#include "config/compression_config.h"

#include <algorithm>
#include <exception>
#include <functional>

#include "comm/policy.h"
#include "comm/powersgd_settings.h"

namespace cmpi::config {
namespace {

const std::vector<std::string> kPresets = {"none", "mzhybrid", "zhybrid", "auto"};

template <typename T, typename Name>
std::vector<std::string> names_of(int count, Name name) {
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) names.push_back(name(T(i)));
  return names;
}

std::vector<std::string> group_names() {
  return names_of<comm::GroupKind>(comm::kGroupKindCount,
                                   [](comm::GroupKind g) { return comm::to_string(g); });
}
std::vector<std::string> op_names() {
  auto names = names_of<comm::Op>(comm::kOpCount, [](comm::Op o) { return comm::to_string(o); });
  for (const char* alias : {"send", "recv", "sendrecv"}) names.push_back(alias);
  return names;
}
std::vector<std::string> role_names() {
  return names_of<comm::Role>(comm::kRoleCount, [](comm::Role r) { return comm::to_string(r); });
}

// training.precision's "fp32" is accepted too (compress::parse_word_type).
std::vector<std::string> word_type_names() {
  return names_of<compress::WordType>(
      compress::kWordTypeCount, [](compress::WordType w) { return compress::word_type_name(w); });
}

// Reads `key` as words and maps each through `parse`, naming unknown ones.
template <typename T>
std::vector<T> read_vocabulary(MapReader& match, const std::string& key, const std::string& what,
                               const std::function<std::optional<T>(const std::string&)>& parse,
                               const std::vector<std::string>& known) {
  std::vector<T> values;
  for (const std::string& word : match.read_words(key)) {
    const std::optional<T> value = parse(word);
    if (!value) match.fail(key, unknown_word_message(what, word, known));
    if (std::find(values.begin(), values.end(), *value) == values.end()) values.push_back(*value);
  }
  return values;
}

// The codecs a rule may name: the registry's plus powersgd, which the
// data-parallel optimizer runs (comm/powersgd_settings.h).
std::vector<std::string> codec_names(const compress::CodecRegistry& codecs) {
  std::vector<std::string> names = codecs.names();
  names.push_back(comm::kPowerSgdName);
  return names;
}

// `policy_min_bytes` is what a rule without its own min_bytes inherits.
comm::RuleMatch read_match(MapReader match, int64_t policy_min_bytes) {
  comm::RuleMatch out;
  out.groups = read_vocabulary<comm::GroupKind>(match, "group", "group", comm::parse_group_kind,
                                                group_names());
  out.ops = read_vocabulary<comm::Op>(match, "op", "operation", comm::parse_op, op_names());
  out.roles = read_vocabulary<comm::Role>(match, "role", "role", comm::parse_role, role_names());
  std::string locality = "any";
  match.read("locality", locality, {"intra", "inter", "any"});
  if (locality != "any") out.localities = {*comm::parse_locality(locality)};
  out.words = read_vocabulary<compress::WordType>(match, "word", "word type",
                                                  compress::parse_word_type, word_type_names());
  match.read_size("min_bytes", out.min_bytes, 0);
  match.read_size("max_bytes", out.max_bytes, 0);
  const int64_t min_bytes = out.min_bytes >= 0 ? out.min_bytes : policy_min_bytes;
  if (out.max_bytes >= 0 && out.max_bytes < min_bytes)
    match.fail("max_bytes",
               "max_bytes (" + format_size(out.max_bytes) + ") is below " +
                   (out.min_bytes >= 0 ? std::string("min_bytes (")
                                       : std::string("the inherited compression.min_bytes (")) +
                   format_size(min_bytes) + "), so the rule matches nothing");
  match.finish();
  return out;
}

// `codec:` is `none`, a name with optional parameters in the command-line
// form ("zfp:mode=rate,rate=10"), or a mapping {name: zfp, mode: rate, ...}.
std::optional<compress::CodecSpec> read_codec_spec(const YAML::Node& node, const std::string& path,
                                                   const MapReader& rule) {
  ReadContext& context = rule.context();
  if (node.IsScalar()) {
    if (node.Scalar() == "none") return std::nullopt;
    try {
      return compress::CodecSpec::parse(node.Scalar());
    } catch (const compress::CodecError& e) {
      rule.fail("codec", e.what());
    }
  }
  if (!node.IsMap())
    rule.fail("codec",
              "expected `none`, a codec name or a mapping like {name: zfp, mode: rate, "
              "rate: 10}");
  std::string name;
  std::map<std::string, std::string> params;
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (!it->first.IsScalar()) context.fail(path, it->first, "codec keys must be plain words");
    const std::string key = it->first.Scalar();
    const std::string key_path = path + "." + key;
    if (!it->second.IsScalar())
      context.fail(key_path, it->second.IsNull() ? it->first : it->second,
                   "codec parameters must be single values, not lists, mappings or nothing");
    if (key == "name" ? !name.empty() : params.count(key) != 0)
      context.fail(key_path, it->first, "key written twice");
    if (key == "name")
      name = it->second.Scalar();
    else
      params[key] = it->second.Scalar();
  }
  if (name.empty()) rule.fail("codec", "missing `name:` (e.g. {name: zfp, mode: rate, rate: 10})");
  if (name == "none") {
    if (!params.empty()) rule.fail("codec", "codec `none` takes no parameters");
    return std::nullopt;
  }
  return compress::CodecSpec(name, std::move(params));
}

comm::PolicyRule read_rule(const YAML::Node& node, MapReader rule, int64_t policy_min_bytes,
                           const compress::CodecRegistry& codecs) {
  comm::PolicyRule out;
  out.origin = rule.context().where(rule.path(), node);
  out.match = read_match(rule.section("match"), policy_min_bytes);

  if (!rule.has("codec"))
    rule.fail("codec",
              "missing: every rule says how to send what it matches (`codec: none` for "
              "raw, or e.g. {name: zfp, mode: rate, rate: 10})");
  out.codec = read_codec_spec(rule.take("codec"), rule.key_path("codec"), rule);
  bool lossless = true;
  const bool powersgd = out.codec && comm::is_powersgd(*out.codec);
  if (powersgd) {
    try {
      comm::parse_powersgd_settings(*out.codec);
    } catch (const std::exception& e) {
      rule.fail("codec", e.what());
    }
  } else if (out.codec) {
    if (!codecs.contains(out.codec->name()))
      rule.fail("codec", unknown_word_message("codec", out.codec->name(), codec_names(codecs)));
    try {
      lossless = codecs.create(*out.codec)->lossless();
    } catch (const std::exception& e) {
      rule.fail("codec", e.what());
    }
  }

  rule.read("error_feedback", out.error_feedback);
  if (powersgd && out.error_feedback)
    rule.fail("error_feedback", "powersgd keeps its own error feedback; remove this key");
  if (out.error_feedback && lossless)
    rule.fail("error_feedback",
              out.codec ? "codec '" + out.codec->name() +
                              "' is lossless, so there is no error to feed back"
                        : std::string("the rule sends raw data (codec: none), so there is no "
                                      "error to feed back"));
  rule.read_size("chunk_bytes", out.chunk_bytes, 1);
  if (out.chunk_bytes > 0 && out.chunk_bytes % int64_t(sizeof(float)) != 0)
    rule.fail("chunk_bytes", "must be a whole number of floats (a multiple of 4), got " +
                                 std::to_string(out.chunk_bytes));
  rule.finish();
  if (powersgd) {
    const std::string problem = comm::powersgd_rule_problem(out);
    if (!problem.empty()) rule.fail("match", problem);
  }
  return out;
}

// compression.auto (preset auto only).
comm::AutoSettings read_auto_settings(MapReader section) {
  comm::AutoSettings out;
  section.read("max_rel_error", out.max_rel_error, RealRange{0.0, 1e3});
  section.read("max_rel_error_feedback", out.max_rel_error_feedback, RealRange{0.0, 1e3});
  section.read("decide_every", out.decide_every, IntRange{1, 1 << 30});
  section.read("probe_every", out.probe_every, IntRange{0, 1 << 30});
  section.read("min_gain", out.min_gain, RealRange{0.0, 0.99});
  section.read("trend_window", out.trend_window, IntRange{0, 1 << 20});
  section.finish();
  return out;
}

}  // namespace

comm::PolicyConfig read_compression_config(MapReader section,
                                           const compress::CodecRegistry& codecs) {
  comm::PolicyConfig out;
  section.read("preset", out.preset, kPresets);
  section.read("preset_locality", out.preset_locality, {"inter", "any"});
  section.read("ranks_per_node", out.ranks_per_node, IntRange{0, 1 << 20});
  section.read_size("plain_ring_min_bytes", out.plain_ring_min_bytes, 0);
  section.read_size("min_bytes", out.min_bytes, 0);
  section.read_size("chunk_bytes", out.chunk_bytes, 1);
  if (out.chunk_bytes % int64_t(sizeof(float)) != 0)
    section.fail("chunk_bytes", "must be a whole number of floats (a multiple of 4), got " +
                                    std::to_string(out.chunk_bytes));
  section.read("error_sample_rate", out.error_sample_rate, RealRange{0.0, 1.0});
  if (section.has("auto") && out.preset != "auto")
    section.fail("auto",
                 "is read only with `preset: auto` (this config's preset is " + out.preset + ")");
  out.auto_settings = read_auto_settings(section.section("auto"));
  section.read("sparse_embedding", out.sparse_embedding, {"auto", "off"});

  const bool has_rules = section.has("rules");
  const YAML::Node rules = section.take("rules");
  const std::string rules_path = section.key_path("rules");
  if (has_rules && !rules.IsNull()) {
    if (!rules.IsSequence())
      section.fail("rules", "expected a list of rules (`- match: {...}` / `codec: ...`)");
    for (size_t i = 0; i < rules.size(); ++i) {
      const std::string rule_path = rules_path + "[" + std::to_string(i) + "]";
      const YAML::Node item = rules[i];
      out.rules.push_back(
          read_rule(item, MapReader(item, rule_path, section.context()), out.min_bytes, codecs));
    }
  }
  section.finish();
  // Every key has been checked above; building the policy once more checks
  // the rules together with the preset's, as every rank will at start-up.
  try {
    comm::Policy policy(out, codecs);
  } catch (const comm::PolicyError& e) {
    throw ConfigError(section.context().where(section.path(), YAML::Node()) + ": " +
                      section.path() + ": " + e.what());
  }
  return out;
}

namespace {

// The YAML spelling of a match value.
template <typename T>
const char* spelling(T value) {
  return comm::to_string(value);
}
const char* spelling(compress::WordType word) {
  return compress::word_type_name(word);
}

template <typename T>
void write_words(YAML::Emitter& out, const char* key, const std::vector<T>& values) {
  if (values.empty()) return;
  out << YAML::Key << key << YAML::Value;
  if (values.size() == 1) {
    out << spelling(values[0]);
    return;
  }
  out << YAML::Flow << YAML::BeginSeq;
  for (const T& value : values) out << spelling(value);
  out << YAML::EndSeq;
}

}  // namespace

void write_compression_config(YAML::Emitter& out, const comm::PolicyConfig& config) {
  out << YAML::Key << "preset" << YAML::Value << config.preset;
  out << YAML::Key << "preset_locality" << YAML::Value << config.preset_locality;
  out << YAML::Key << "ranks_per_node" << YAML::Value << config.ranks_per_node;
  out << YAML::Key << "plain_ring_min_bytes" << YAML::Value
      << format_size(config.plain_ring_min_bytes);
  out << YAML::Key << "min_bytes" << YAML::Value << format_size(config.min_bytes);
  out << YAML::Key << "chunk_bytes" << YAML::Value << format_size(config.chunk_bytes);
  out << YAML::Key << "error_sample_rate" << YAML::Value << format_real(config.error_sample_rate);
  if (config.preset == "auto") {
    const comm::AutoSettings& a = config.auto_settings;
    out << YAML::Key << "auto" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "max_rel_error" << YAML::Value << format_real(a.max_rel_error);
    out << YAML::Key << "max_rel_error_feedback" << YAML::Value
        << format_real(a.max_rel_error_feedback);
    out << YAML::Key << "decide_every" << YAML::Value << a.decide_every;
    out << YAML::Key << "probe_every" << YAML::Value << a.probe_every;
    out << YAML::Key << "min_gain" << YAML::Value << format_real(a.min_gain);
    out << YAML::Key << "trend_window" << YAML::Value << a.trend_window;
    out << YAML::EndMap;
  }
  out << YAML::Key << "sparse_embedding" << YAML::Value << config.sparse_embedding;
  out << YAML::Key << "rules" << YAML::Value;
  if (config.rules.empty()) {
    out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
    return;
  }
  out << YAML::BeginSeq;
  for (const comm::PolicyRule& rule : config.rules) {
    out << YAML::BeginMap;
    out << YAML::Key << "match" << YAML::Value << YAML::Flow << YAML::BeginMap;
    write_words(out, "group", rule.match.groups);
    write_words(out, "op", rule.match.ops);
    write_words(out, "role", rule.match.roles);
    write_words(out, "locality", rule.match.localities);
    write_words(out, "word", rule.match.words);
    if (rule.match.min_bytes >= 0)
      out << YAML::Key << "min_bytes" << YAML::Value << format_size(rule.match.min_bytes);
    if (rule.match.max_bytes >= 0)
      out << YAML::Key << "max_bytes" << YAML::Value << format_size(rule.match.max_bytes);
    out << YAML::EndMap;
    out << YAML::Key << "codec" << YAML::Value;
    if (!rule.codec) {
      out << "none";
    } else {
      out << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value
          << rule.codec->name();
      for (const auto& [key, value] : rule.codec->params())
        out << YAML::Key << key << YAML::Value << value;
      out << YAML::EndMap;
    }
    out << YAML::Key << "error_feedback" << YAML::Value << rule.error_feedback;
    if (rule.chunk_bytes > 0)
      out << YAML::Key << "chunk_bytes" << YAML::Value << format_size(rule.chunk_bytes);
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

}  // namespace cmpi::config
