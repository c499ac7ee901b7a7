// Reads the file into a JsonValue tree, then walks the fields listed in the
// header: the model and the added tokens here, the pipeline components in
// hf_tokenizer_components.cpp. Every object's keys are checked against the
// keys this reader knows, so a setting it would ignore (and so tokenize
// differently) is refused rather than skipped.
#include "data/hf_tokenizer_file.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "data/hf_tokenizer_components.h"
#include "data/json_field_reader.h"
#include "data/json_value.h"

namespace cmpi::data {
namespace {

using Kind = JsonValue::Kind;

void read_merges(const JsonFieldReader& r, const JsonValue& merges, HfTokenizerFile& out) {
  r.expect(merges, Kind::kArray, "model.merges");
  out.merges.reserve(merges.items().size());
  for (size_t i = 0; i < merges.items().size(); ++i) {
    const JsonValue& merge = merges.items()[i];
    const std::string field = "model.merges[" + std::to_string(i) + "]";
    if (merge.kind() == Kind::kString) {
      // "left right": tokens never hold a space (the byte map spells it Ġ,
      // SentencePiece ▁).
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

void read_model(const JsonFieldReader& r, const JsonValue& model, HfTokenizerFile& out) {
  const std::string type = r.type(model, "model");
  if (type != "BPE" && !(type.empty() && model.find("merges"))) {
    r.fail("model.type",
           quoted(type.empty() ? "(none)" : type) + " is not supported (only BPE: type 'BPE')");
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
    const std::string field = std::string("model.") + affix;
    const std::string value = r.string(model, affix, "", "model");
    if (!value.empty()) r.fail(field, quoted(value) + " is not supported (BPE without affixes)");
  }
  out.unk_token = r.string(model, "unk_token", "", "model");
  out.fuse_unk = r.boolean(model, "fuse_unk", false, "model");
  out.byte_fallback = r.boolean(model, "byte_fallback", false, "model");
  out.ignore_merges = r.boolean(model, "ignore_merges", false, "model");

  const JsonValue& vocab =
      r.expect(r.member(model, "vocab", "model"), Kind::kObject, "model.vocab");
  out.vocab.reserve(vocab.members().size());
  for (const auto& [token, id] : vocab.members()) {
    out.vocab.emplace_back(token, r.id(id, "model.vocab." + quoted(token)));
  }
  read_merges(r, r.member(model, "merges", "model"), out);
}

void read_added_tokens(const JsonFieldReader& r, const JsonValue& tokens, HfTokenizerFile& out) {
  r.expect(tokens, Kind::kArray, "added_tokens");
  for (size_t i = 0; i < tokens.items().size(); ++i) {
    const std::string field = "added_tokens[" + std::to_string(i) + "]";
    const JsonValue& t =
        r.object(tokens.items()[i], field,
                 {"id", "content", "single_word", "lstrip", "rstrip", "normalized", "special"});
    HfAddedToken token;
    token.id = r.id(r.member(t, "id", field), field + ".id");
    token.content =
        r.expect(r.member(t, "content", field), Kind::kString, field + ".content").text();
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
  const JsonFieldReader r(path);
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
  // The decoder first: whether it is ByteLevel tells what a missing
  // pre-tokenizer means.
  const JsonValue null_value;
  const JsonValue* decoder = root.find("decoder");
  const DecoderShape shape = read_decoder(r, decoder ? *decoder : null_value, out);
  const JsonValue* pre = root.find("pre_tokenizer");
  read_pre_tokenizer(r, pre ? *pre : null_value, shape, out);
  if (const JsonValue* post = root.find("post_processor")) read_post_processor(r, *post, out);
  return out;
}

}  // namespace cmpi::data
