// Reads the file into a JsonValue tree, then walks the fields listed in the
// header. Every object's keys are checked against the keys this reader
// knows, so a setting it would ignore (and so tokenize differently) is
// refused rather than skipped.
#include "data/hf_tokenizer_file.h"

#include <fstream>
#include <initializer_list>
#include <sstream>
#include <stdexcept>

#include "data/json_value.h"

namespace cmpi::data {

const char* const kGpt2SplitPattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

namespace {

using Kind = JsonValue::Kind;

// Errors name the file and the field: "tokenizer.json: model.merges[3]: why".
class FieldReader {
 public:
  explicit FieldReader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& why) const {
    throw std::runtime_error(path_ + ": " + field + ": " + why);
  }

  const JsonValue& expect(const JsonValue& value, Kind kind, const std::string& field) const {
    if (value.kind() != kind) {
      fail(field, std::string("expected ") + JsonValue::kind_name(kind) + ", found " +
                      JsonValue::kind_name(value.kind()));
    }
    return value;
  }

  // An object whose keys are all in `known`.
  const JsonValue& object(const JsonValue& value, const std::string& field,
                          std::initializer_list<const char*> known) const {
    expect(value, Kind::kObject, field);
    for (const auto& [key, member] : value.members()) {
      bool listed = false;
      for (const char* k : known) listed = listed || key == k;
      if (!listed) fail(field + "." + key, "is not a setting this reader knows; refused");
    }
    return value;
  }

  bool boolean(const JsonValue& object, const char* key, bool fallback,
               const std::string& field) const {
    const JsonValue* v = object.find(key);
    if (!v || v->is_null()) return fallback;
    return expect(*v, Kind::kBool, field + "." + key).boolean();
  }

  int64_t integer(const JsonValue& value, const std::string& field) const {
    expect(value, Kind::kNumber, field);
    const std::string& t = value.text();
    for (size_t i = t[0] == '-' ? 1 : 0; i < t.size(); ++i) {
      if (t[i] < '0' || t[i] > '9') fail(field, "expected an integer, found " + t);
    }
    if (t.size() > 12) fail(field, "integer out of range: " + t);
    return std::stoll(t);
  }

  int32_t id(const JsonValue& value, const std::string& field) const {
    const int64_t v = integer(value, field);
    if (v < 0 || v > INT32_MAX) fail(field, "id " + std::to_string(v) + " out of range");
    return int32_t(v);
  }

  // The "type" member of a component, or "" if it has none.
  std::string type(const JsonValue& value, const std::string& field) const {
    expect(value, Kind::kObject, field);
    const JsonValue* t = value.find("type");
    if (!t) return "";
    return expect(*t, Kind::kString, field + ".type").text();
  }

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string quoted(const std::string& s) {
  return "'" + s + "'";
}

void read_model(const FieldReader& r, const JsonValue& model, HfTokenizerFile& out) {
  const std::string type = r.type(model, "model");
  if (type != "BPE" && !(type.empty() && model.find("merges"))) {
    r.fail("model.type", quoted(type.empty() ? "(none)" : type) +
                             " is not supported (only byte-level BPE: type 'BPE')");
  }
  r.object(model, "model",
           {"type", "dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix",
            "fuse_unk", "byte_fallback", "ignore_merges", "vocab", "merges"});
  if (const JsonValue* dropout = model.find("dropout"); dropout && !dropout->is_null()) {
    if (r.expect(*dropout, Kind::kNumber, "model.dropout").number() != 0) {
      r.fail("model.dropout", "BPE dropout " + dropout->text() +
                                  " makes encoding random; only null or 0 is supported");
    }
  }
  for (const char* affix : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const JsonValue* v = model.find(affix);
    if (v && !v->is_null() &&
        !r.expect(*v, Kind::kString, std::string("model.") + affix).text().empty()) {
      r.fail(std::string("model.") + affix,
             quoted(v->text()) + " is not supported (byte-level BPE uses none)");
    }
  }
  if (const JsonValue* unk = model.find("unk_token"); unk && !unk->is_null()) {
    r.expect(*unk, Kind::kString, "model.unk_token");
  }
  r.boolean(model, "fuse_unk", false, "model");
  r.boolean(model, "byte_fallback", false, "model");
  out.ignore_merges = r.boolean(model, "ignore_merges", false, "model");

  const JsonValue* vocab = model.find("vocab");
  if (!vocab) r.fail("model.vocab", "missing");
  r.expect(*vocab, Kind::kObject, "model.vocab");
  out.vocab.reserve(vocab->members().size());
  for (const auto& [token, id] : vocab->members()) {
    out.vocab.emplace_back(token, r.id(id, "model.vocab." + quoted(token)));
  }

  const JsonValue* merges = model.find("merges");
  if (!merges) r.fail("model.merges", "missing");
  r.expect(*merges, Kind::kArray, "model.merges");
  out.merges.reserve(merges->items().size());
  for (size_t i = 0; i < merges->items().size(); ++i) {
    const JsonValue& merge = merges->items()[i];
    const std::string field = "model.merges[" + std::to_string(i) + "]";
    if (merge.kind() == Kind::kString) {
      // "left right": tokens never hold a space (the byte map spells it Ġ).
      const std::string& line = merge.text();
      const size_t space = line.find(' ');
      if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos ||
          space == 0 || space + 1 == line.size()) {
        r.fail(field, quoted(line) + ": expected two tokens separated by one space");
      }
      out.merges.push_back({line.substr(0, space), line.substr(space + 1)});
    } else if (merge.kind() == Kind::kArray) {
      if (merge.items().size() != 2) {
        r.fail(field, "expected a pair [left, right], found " +
                          std::to_string(merge.items().size()) + " items");
      }
      out.merges.push_back({r.expect(merge.items()[0], Kind::kString, field + "[0]").text(),
                            r.expect(merge.items()[1], Kind::kString, field + "[1]").text()});
    } else {
      r.fail(field, std::string("expected \"left right\" or [left, right], found ") +
                        JsonValue::kind_name(merge.kind()));
    }
  }
}

void read_added_tokens(const FieldReader& r, const JsonValue& tokens, HfTokenizerFile& out) {
  r.expect(tokens, Kind::kArray, "added_tokens");
  for (size_t i = 0; i < tokens.items().size(); ++i) {
    const std::string field = "added_tokens[" + std::to_string(i) + "]";
    const JsonValue& t =
        r.object(tokens.items()[i], field,
                 {"id", "content", "single_word", "lstrip", "rstrip", "normalized", "special"});
    HfAddedToken token;
    const JsonValue* id = t.find("id");
    const JsonValue* content = t.find("content");
    if (!id) r.fail(field + ".id", "missing");
    if (!content) r.fail(field + ".content", "missing");
    token.id = r.id(*id, field + ".id");
    token.content = r.expect(*content, Kind::kString, field + ".content").text();
    if (token.content.empty()) r.fail(field + ".content", "empty");
    if (r.boolean(t, "single_word", false, field)) {
      r.fail(field + ".single_word", "true is not supported (token " + quoted(token.content) + ")");
    }
    token.special = r.boolean(t, "special", false, field);
    token.lstrip = r.boolean(t, "lstrip", false, field);
    token.rstrip = r.boolean(t, "rstrip", false, field);
    token.normalized = r.boolean(t, "normalized", !token.special, field);
    out.added_tokens.push_back(std::move(token));
  }
}

void read_normalizer(const FieldReader& r, const JsonValue& n, const std::string& field,
                     HfTokenizerFile& out) {
  const std::string type = r.type(n, field);
  if (type == "Sequence") {
    r.object(n, field, {"type", "normalizers"});
    const JsonValue* list = n.find("normalizers");
    if (!list) r.fail(field + ".normalizers", "missing");
    r.expect(*list, Kind::kArray, field + ".normalizers");
    for (size_t i = 0; i < list->items().size(); ++i) {
      read_normalizer(r, list->items()[i], field + ".normalizers[" + std::to_string(i) + "]", out);
    }
    return;
  }
  r.object(n, field, {"type"});
  if (type == "NFC") {
    out.normalizers.push_back(UnicodeNormalForm::kNfc);
  } else if (type == "NFD") {
    out.normalizers.push_back(UnicodeNormalForm::kNfd);
  } else if (type == "NFKC") {
    out.normalizers.push_back(UnicodeNormalForm::kNfkc);
  } else if (type == "NFKD") {
    out.normalizers.push_back(UnicodeNormalForm::kNfkd);
  } else {
    r.fail(field + ".type", quoted(type) +
                                " is not supported (null, NFC, NFD, NFKC, NFKD or a "
                                "Sequence of them)");
  }
}

// A ByteLevel pre-tokenizer, post-processor or decoder; returns it.
const JsonValue& byte_level(const FieldReader& r, const JsonValue& v, const std::string& field) {
  return r.object(v, field, {"type", "add_prefix_space", "trim_offsets", "use_regex"});
}

void read_pre_tokenizer(const FieldReader& r, const JsonValue& p, HfTokenizerFile& out) {
  const std::string field = "pre_tokenizer";
  const std::string type = r.type(p, field);
  if (type == "ByteLevel") {
    byte_level(r, p, field);
    out.add_prefix_space = r.boolean(p, "add_prefix_space", false, field);
    out.split_by_gpt2_pattern = r.boolean(p, "use_regex", true, field);
    return;
  }
  if (type != "Sequence") {
    r.fail(field + ".type", quoted(type) +
                                " is not supported (ByteLevel, or a Sequence of a "
                                "Split by GPT-2's pattern and ByteLevel)");
  }
  r.object(p, field, {"type", "pretokenizers"});
  const JsonValue* list = p.find("pretokenizers");
  if (!list) r.fail(field + ".pretokenizers", "missing");
  r.expect(*list, Kind::kArray, field + ".pretokenizers");
  const auto& items = list->items();
  const std::string last = field + ".pretokenizers[" + std::to_string(items.size() - 1) + "]";
  if (items.empty() || items.size() > 2 || r.type(items.back(), last) != "ByteLevel") {
    r.fail(field + ".pretokenizers",
           "only [ByteLevel] or [Split by GPT-2's pattern, ByteLevel] is supported");
  }
  byte_level(r, items.back(), last);
  const bool use_regex = r.boolean(items.back(), "use_regex", true, last);
  out.add_prefix_space = r.boolean(items.back(), "add_prefix_space", false, last);
  out.split_by_gpt2_pattern = use_regex;
  if (items.size() == 1) return;

  // Split then ByteLevel: the Split must do exactly what ByteLevel's own
  // regex does, and ByteLevel must not split again or add a space per piece.
  const std::string split = field + ".pretokenizers[0]";
  const std::string split_type = r.type(items[0], split);
  if (split_type != "Split") {
    r.fail(split + ".type", quoted(split_type) + " is not supported before ByteLevel (Split)");
  }
  r.object(items[0], split, {"type", "pattern", "behavior", "invert"});
  const JsonValue* pattern = items[0].find("pattern");
  const JsonValue* regex = pattern ? pattern->find("Regex") : nullptr;
  if (!regex || regex->kind() != Kind::kString || regex->text() != kGpt2SplitPattern) {
    r.fail(split + ".pattern",
           "only GPT-2's pattern {\"Regex\": \"" + std::string(kGpt2SplitPattern) +
               "\"} is supported" +
               (regex && regex->kind() == Kind::kString ? ", found " + quoted(regex->text())
                                                        : std::string()));
  }
  const JsonValue* behavior = items[0].find("behavior");
  if (!behavior || behavior->kind() != Kind::kString || behavior->text() != "Isolated") {
    r.fail(split + ".behavior", "only 'Isolated' is supported");
  }
  if (r.boolean(items[0], "invert", false, split)) r.fail(split + ".invert", "must be false");
  if (use_regex) r.fail(last + ".use_regex", "must be false after a Split (it would split twice)");
  if (out.add_prefix_space) {
    r.fail(last + ".add_prefix_space", "must be false after a Split (it applies per piece there)");
  }
  out.split_by_gpt2_pattern = true;
}

// Components that must be null or ByteLevel (or a Sequence of ByteLevel).
void read_byte_level_only(const FieldReader& r, const JsonValue& v, const std::string& field,
                          const char* sequence_key, const char* why) {
  if (v.is_null()) return;
  const std::string type = r.type(v, field);
  if (type == "ByteLevel") {
    byte_level(r, v, field);
    return;
  }
  if (type == "Sequence") {
    r.object(v, field, {"type", sequence_key});
    const JsonValue* list = v.find(sequence_key);
    if (!list) r.fail(field + "." + sequence_key, "missing");
    r.expect(*list, Kind::kArray, field + "." + sequence_key);
    for (size_t i = 0; i < list->items().size(); ++i) {
      read_byte_level_only(r, list->items()[i],
                           field + "." + sequence_key + "[" + std::to_string(i) + "]", sequence_key,
                           why);
    }
    return;
  }
  r.fail(field + ".type", quoted(type) + " is not supported (" + why + ")");
}

}  // namespace

HfTokenizerFile HfTokenizerFile::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) throw std::runtime_error(path + ": read error");
  return parse(s.str(), path);
}

HfTokenizerFile HfTokenizerFile::parse(const std::string& json, const std::string& path) {
  HfTokenizerFile out;
  out.path = path;
  JsonValue root;
  try {
    root = JsonValue::parse(json);
  } catch (const JsonError& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
  const FieldReader r(path);
  if (root.kind() != Kind::kObject) r.fail("(top level)", "expected a tokenizer.json object");
  r.object(root, "(top level)",
           {"version", "truncation", "padding", "added_tokens", "normalizer", "pre_tokenizer",
            "post_processor", "decoder", "model"});
  for (const char* shaping : {"truncation", "padding"}) {
    const JsonValue* v = root.find(shaping);
    if (v && !v->is_null()) r.fail(shaping, "must be null (it would change every encoding)");
  }
  const JsonValue* model = root.find("model");
  if (!model) r.fail("model", "missing");
  read_model(r, *model, out);
  if (const JsonValue* added = root.find("added_tokens"); added && !added->is_null()) {
    read_added_tokens(r, *added, out);
  }
  if (const JsonValue* n = root.find("normalizer"); n && !n->is_null()) {
    read_normalizer(r, *n, "normalizer", out);
  }
  const JsonValue* pre = root.find("pre_tokenizer");
  if (!pre || pre->is_null()) {
    r.fail("pre_tokenizer", "missing: a byte-level BPE file has a ByteLevel pre-tokenizer");
  }
  read_pre_tokenizer(r, *pre, out);
  if (const JsonValue* post = root.find("post_processor")) {
    read_byte_level_only(r, *post, "post_processor", "processors",
                         "it would add or change ids; null or ByteLevel");
  }
  if (const JsonValue* decoder = root.find("decoder")) {
    read_byte_level_only(r, *decoder, "decoder", "decoders", "null or ByteLevel");
  }
  return out;
}

}  // namespace cmpi::data
