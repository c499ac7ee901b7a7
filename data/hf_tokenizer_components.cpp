// Each component is matched on its "type", its keys are checked against the
// keys this reader knows, and every setting that would change ids is either
// carried into HfTokenizerFile or refused naming its field.
#include "data/hf_tokenizer_components.h"

#include <unordered_set>

#include "data/utf8.h"

namespace cmpi::data {
namespace {

using Kind = JsonValue::Kind;

std::string indexed(const std::string& field, const char* key, size_t i) {
  return field + "." + key + "[" + std::to_string(i) + "]";
}

// The items of the array member `key` of a Sequence component.
const std::vector<JsonValue>& sequence_items(const JsonFieldReader& r, const JsonValue& v,
                                             const std::string& field, const char* key) {
  r.object(v, field, {"type", key});
  return r.expect(r.member(v, key, field), Kind::kArray, field + "." + key).items();
}

// A string that is exactly one UTF-8 character, as the library's `char`
// settings (Metaspace's replacement, Strip's content) must be.
std::string one_character(const JsonFieldReader& r, const JsonValue& object, const char* key,
                          const std::string& field) {
  const std::string s =
      r.expect(r.member(object, key, field), Kind::kString, field + "." + key).text();
  if (s.empty() || decode_utf8(s, 0).code_point == kInvalidCodePoint ||
      decode_utf8(s, 0).length != s.size()) {
    r.fail(field + "." + key, quoted(s) + ": expected one character");
  }
  return s;
}

// Replace's {"String": s} pattern; a Regex is refused.
std::string string_pattern(const JsonFieldReader& r, const JsonValue& object,
                           const std::string& field) {
  const JsonValue& pattern = r.member(object, "pattern", field);
  r.object(pattern, field + ".pattern", {"String", "Regex"});
  const JsonValue* s = pattern.find("String");
  if (!s) {
    r.fail(field + ".pattern", "only a {\"String\": ...} pattern is supported (a Regex is not)");
  }
  const std::string& text = r.expect(*s, Kind::kString, field + ".pattern.String").text();
  if (text.empty()) r.fail(field + ".pattern.String", "empty");
  return text;
}

MetaspaceSettings metaspace_settings(const JsonFieldReader& r, const JsonValue& m,
                                     const std::string& field) {
  r.object(m, field,
           {"type", "replacement", "prepend_scheme", "split", "add_prefix_space", "str_rep"});
  MetaspaceSettings s;
  s.replacement = one_character(r, m, "replacement", field);
  const std::string scheme = r.string(m, "prepend_scheme", "always", field);
  if (scheme == "always") {
    s.prepend_scheme = PrependScheme::kAlways;
  } else if (scheme == "first") {
    s.prepend_scheme = PrependScheme::kFirst;
  } else if (scheme == "never") {
    s.prepend_scheme = PrependScheme::kNever;
  } else {
    r.fail(field + ".prepend_scheme", quoted(scheme) + " is not one of always, first, never");
  }
  // Files written before prepend_scheme existed say add_prefix_space; false
  // means never, and a scheme that says otherwise is contradictory.
  if (!r.boolean(m, "add_prefix_space", true, field)) {
    if (m.find("prepend_scheme") && s.prepend_scheme != PrependScheme::kNever) {
      r.fail(field + ".add_prefix_space", "false contradicts prepend_scheme " + quoted(scheme));
    }
    s.prepend_scheme = PrependScheme::kNever;
  }
  s.split = r.boolean(m, "split", true, field);
  return s;
}

// A ByteLevel pre-tokenizer, post-processor or decoder; returns it.
const JsonValue& byte_level(const JsonFieldReader& r, const JsonValue& v,
                            const std::string& field) {
  return r.object(v, field, {"type", "add_prefix_space", "trim_offsets", "use_regex"});
}

void read_decoder_into(const JsonFieldReader& r, const JsonValue& d, const std::string& field,
                       HfTokenizerFile& out, DecoderShape& shape) {
  const std::string type = r.type(d, field);
  if (type == "Sequence") {
    const auto& items = sequence_items(r, d, field, "decoders");
    for (size_t i = 0; i < items.size(); ++i) {
      read_decoder_into(r, items[i], indexed(field, "decoders", i), out, shape);
    }
    return;
  }
  if (type == "ByteLevel") {
    byte_level(r, d, field);
    if (shape.byte_level_field.empty()) shape.byte_level_field = field;
    return;
  }
  DecoderStep step;
  if (type == "Replace") {
    r.object(d, field, {"type", "pattern", "content"});
    step.kind = DecoderStep::Kind::kReplace;
    step.from = string_pattern(r, d, field);
    step.to = r.expect(r.member(d, "content", field), Kind::kString, field + ".content").text();
  } else if (type == "ByteFallback" || type == "Fuse") {
    r.object(d, field, {"type"});
    step.kind = type == "Fuse" ? DecoderStep::Kind::kFuse : DecoderStep::Kind::kByteFallback;
  } else if (type == "Strip") {
    r.object(d, field, {"type", "content", "start", "stop"});
    step.kind = DecoderStep::Kind::kStrip;
    step.from = one_character(r, d, "content", field);
    const auto count = [&](const char* key) {
      const int64_t n = r.integer(r.member(d, key, field), field + "." + key);
      if (n < 0) r.fail(field + "." + key, "negative");
      return size_t(n);
    };
    step.start = count("start");
    step.stop = count("stop");
  } else if (type == "Metaspace") {
    step.kind = DecoderStep::Kind::kMetaspace;
    step.metaspace = metaspace_settings(r, d, field);
  } else {
    r.fail(field + ".type", quoted(type) +
                                " is not supported (null, ByteLevel, or Replace, ByteFallback, "
                                "Fuse, Strip, Metaspace or a Sequence of them)");
  }
  if (shape.character_field.empty()) {
    shape.character_field = field;
    shape.character_type = type;
  }
  out.decoders.push_back(std::move(step));
}

void read_byte_level_sequence(const JsonFieldReader& r, const JsonValue& p, HfTokenizerFile& out) {
  const std::string field = "pre_tokenizer";
  const auto& items = sequence_items(r, p, field, "pretokenizers");
  const std::string last = indexed(field, "pretokenizers", items.empty() ? 0 : items.size() - 1);
  if (items.empty() || items.size() > 2 || r.type(items.back(), last) != "ByteLevel") {
    r.fail(field + ".pretokenizers",
           "only [ByteLevel] or [Split by GPT-2's or Llama 3's pattern, ByteLevel] is supported");
  }
  byte_level(r, items.back(), last);
  const bool use_regex = r.boolean(items.back(), "use_regex", true, last);
  out.add_prefix_space = r.boolean(items.back(), "add_prefix_space", false, last);
  out.split_pattern = use_regex ? SplitPattern::kGpt2 : SplitPattern::kNone;
  if (items.size() == 1) return;

  // Split then ByteLevel: the Split must be a pattern written out by hand
  // here, and ByteLevel must not split again or add a space per piece.
  const std::string split = indexed(field, "pretokenizers", 0);
  const std::string split_type = r.type(items[0], split);
  if (split_type != "Split") {
    r.fail(split + ".type", quoted(split_type) + " is not supported before ByteLevel (Split)");
  }
  r.object(items[0], split, {"type", "pattern", "behavior", "invert"});
  const JsonValue* pattern = items[0].find("pattern");
  const JsonValue* regex =
      pattern && pattern->kind() == Kind::kObject ? pattern->find("Regex") : nullptr;
  const bool is_string = regex && regex->kind() == Kind::kString;
  if (is_string && regex->text() == kGpt2SplitPattern) {
    out.split_pattern = SplitPattern::kGpt2;
  } else if (is_string && regex->text() == kLlama3SplitPattern) {
    out.split_pattern = SplitPattern::kLlama3;
  } else {
    r.fail(split + ".pattern",
           "only GPT-2's pattern {\"Regex\": \"" + std::string(kGpt2SplitPattern) +
               "\"} or Llama 3's {\"Regex\": \"" + kLlama3SplitPattern + "\"} is supported" +
               (is_string ? ", found " + quoted(regex->text()) : std::string()));
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
}

// The ids a TemplateProcessing adds before $A in its single template; a
// template that adds ids after the text or leaves the text out is refused.
void read_template(const JsonFieldReader& r, const JsonValue& t, const std::string& field,
                   HfTokenizerFile& out) {
  r.object(t, field, {"type", "single", "pair", "special_tokens"});
  const auto refuse = [&](const std::string& why) {
    r.fail(field + ".type",
           "'TemplateProcessing' is not supported (it would add or change ids) except as "
           "special tokens then $A, which adds a beginning-of-text token (" +
               why + ")");
  };
  const JsonValue* single = t.find("single");
  if (!single || single->kind() != Kind::kArray) refuse(field + ".single: not a list");
  if (const JsonValue* pair = t.find("pair"); pair && !pair->is_null()) {
    r.expect(*pair, Kind::kArray, field + ".pair");  // never used: cmpi-data encodes one text
  }
  const JsonValue* special = t.find("special_tokens");
  std::unordered_set<int32_t> known_ids;
  for (const auto& [token, id] : out.vocab) known_ids.insert(id);
  for (const HfAddedToken& token : out.added_tokens) known_ids.insert(token.id);

  bool seen_text = false;
  for (size_t i = 0; i < single->items().size(); ++i) {
    const std::string piece = indexed(field, "single", i);
    const JsonValue& item = single->items()[i];
    r.object(item, piece, {"SpecialToken", "Sequence"});
    if (const JsonValue* sequence = item.find("Sequence")) {
      r.object(*sequence, piece + ".Sequence", {"id", "type_id"});
      if (seen_text || r.string(*sequence, "id", "", piece + ".Sequence") != "A") {
        refuse(piece + ": only one $A (Sequence A)");
      }
      seen_text = true;
      continue;
    }
    const JsonValue* token = item.find("SpecialToken");
    if (!token) refuse(piece + ": neither SpecialToken nor Sequence");
    r.object(*token, piece + ".SpecialToken", {"id", "type_id"});
    const std::string name = r.string(*token, "id", "", piece + ".SpecialToken");
    if (seen_text) {
      refuse(piece + ": " + quoted(name) +
             " after the text; cmpi-data ends each document with its own token");
    }
    const std::string entry_field = field + ".special_tokens." + quoted(name);
    const JsonValue* entry =
        special && special->kind() == Kind::kObject ? special->find(name) : nullptr;
    if (!entry) r.fail(entry_field, "missing (named by " + piece + ")");
    r.object(*entry, entry_field, {"id", "ids", "tokens"});
    const auto& ids =
        r.expect(r.member(*entry, "ids", entry_field), Kind::kArray, entry_field + ".ids").items();
    for (size_t k = 0; k < ids.size(); ++k) {
      const std::string id_field = entry_field + ".ids[" + std::to_string(k) + "]";
      const int32_t id = r.id(ids[k], id_field);
      if (!known_ids.count(id)) {
        r.fail(id_field, std::to_string(id) + " is neither in model.vocab nor an added token");
      }
      out.prefix_ids.push_back(id);
    }
  }
  if (!seen_text) refuse(field + ".single: no $A");
}

void read_post_processor_into(const JsonFieldReader& r, const JsonValue& v,
                              const std::string& field, HfTokenizerFile& out) {
  if (v.is_null()) return;
  const std::string type = r.type(v, field);
  if (type == "ByteLevel") {
    byte_level(r, v, field);  // offsets only, never ids
  } else if (type == "TemplateProcessing") {
    if (!out.prefix_ids.empty()) r.fail(field, "a second TemplateProcessing is not supported");
    read_template(r, v, field, out);
  } else if (type == "Sequence") {
    const auto& items = sequence_items(r, v, field, "processors");
    for (size_t i = 0; i < items.size(); ++i) {
      read_post_processor_into(r, items[i], indexed(field, "processors", i), out);
    }
  } else {
    r.fail(field + ".type", quoted(type) +
                                " is not supported (it would add or change ids; null, ByteLevel, "
                                "TemplateProcessing adding a first token, or a Sequence of them)");
  }
}

}  // namespace

const char* const kGpt2SplitPattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const char* const kLlama3SplitPattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

void read_normalizer(const JsonFieldReader& r, const JsonValue& n, const std::string& field,
                     HfTokenizerFile& out) {
  const std::string type = r.type(n, field);
  if (type == "Sequence") {
    const auto& items = sequence_items(r, n, field, "normalizers");
    for (size_t i = 0; i < items.size(); ++i) {
      read_normalizer(r, items[i], indexed(field, "normalizers", i), out);
    }
    return;
  }
  NormalizerStep step;
  if (type == "Prepend") {
    r.object(n, field, {"type", "prepend"});
    step.kind = NormalizerStep::Kind::kPrepend;
    step.text = r.expect(r.member(n, "prepend", field), Kind::kString, field + ".prepend").text();
    out.normalizers.push_back(std::move(step));
    return;
  }
  if (type == "Replace") {
    r.object(n, field, {"type", "pattern", "content"});
    step.kind = NormalizerStep::Kind::kReplace;
    step.text = string_pattern(r, n, field);
    step.replacement =
        r.expect(r.member(n, "content", field), Kind::kString, field + ".content").text();
    out.normalizers.push_back(std::move(step));
    return;
  }
  r.object(n, field, {"type"});
  if (type == "NFC") {
    step.form = UnicodeNormalForm::kNfc;
  } else if (type == "NFD") {
    step.form = UnicodeNormalForm::kNfd;
  } else if (type == "NFKC") {
    step.form = UnicodeNormalForm::kNfkc;
  } else if (type == "NFKD") {
    step.form = UnicodeNormalForm::kNfkd;
  } else {
    r.fail(field + ".type", quoted(type) +
                                " is not supported (null, NFC, NFD, NFKC, NFKD, Prepend, Replace "
                                "or a Sequence of them)");
  }
  out.normalizers.push_back(std::move(step));
}

DecoderShape read_decoder(const JsonFieldReader& r, const JsonValue& d, HfTokenizerFile& out) {
  DecoderShape shape;
  if (!d.is_null()) read_decoder_into(r, d, "decoder", out, shape);
  if (!shape.byte_level_field.empty() && !shape.character_field.empty()) {
    r.fail(shape.character_field + ".type",
           quoted(shape.character_type) +
               " is not supported together with the ByteLevel decoder at " +
               shape.byte_level_field);
  }
  return shape;
}

void read_pre_tokenizer(const JsonFieldReader& r, const JsonValue& p, const DecoderShape& decoder,
                        HfTokenizerFile& out) {
  const std::string field = "pre_tokenizer";
  const bool byte_level_decoder = !decoder.byte_level_field.empty();
  if (p.is_null()) {
    if (byte_level_decoder) {
      r.fail(field, "missing: a byte-level BPE file (" + decoder.byte_level_field +
                        " is ByteLevel) has a ByteLevel pre-tokenizer");
    }
    out.byte_level = false;
    return;
  }
  const std::string type = r.type(p, field);
  if (type == "Metaspace" && !byte_level_decoder) {
    out.byte_level = false;
    out.metaspace = true;
    out.metaspace_settings = metaspace_settings(r, p, field);
    return;
  }
  if (type == "ByteLevel") {
    byte_level(r, p, field);
    out.add_prefix_space = r.boolean(p, "add_prefix_space", false, field);
    out.split_pattern =
        r.boolean(p, "use_regex", true, field) ? SplitPattern::kGpt2 : SplitPattern::kNone;
  } else if (type == "Sequence") {
    read_byte_level_sequence(r, p, out);
  } else {
    r.fail(field + ".type", quoted(type) +
                                " is not supported (ByteLevel, a Sequence of a Split by GPT-2's or "
                                "Llama 3's pattern and ByteLevel, or Metaspace" +
                                (type == "Metaspace" ? " without a ByteLevel decoder, here " +
                                                           decoder.byte_level_field + ")"
                                                     : ")"));
  }
  if (!decoder.character_field.empty()) {
    r.fail(
        decoder.character_field + ".type",
        quoted(decoder.character_type) +
            " is not supported with a ByteLevel pre-tokenizer (its decoder is ByteLevel or null)");
  }
}

void read_post_processor(const JsonFieldReader& r, const JsonValue& post, HfTokenizerFile& out) {
  read_post_processor_into(r, post, "post_processor", out);
}

}  // namespace cmpi::data
