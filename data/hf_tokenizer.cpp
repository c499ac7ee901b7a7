// Builds the shared tables once from the file (vocabulary and merges through
// Gpt2Vocabulary::from_tables, the two added-token splitters, the
// end-of-document id), then encodes segment by segment as the header lists.
#include "data/hf_tokenizer.h"

#include <algorithm>
#include <stdexcept>

#include "data/token_string_decoder.h"

namespace cmpi::data {
namespace {

std::shared_ptr<const Gpt2Vocabulary> vocabulary_of(const HfTokenizerFile& file) {
  return std::make_shared<const Gpt2Vocabulary>(Gpt2Vocabulary::from_tables(
      file.vocab, file.merges, file.path, "model.vocab",
      [](size_t i) { return "model.merges[" + std::to_string(i) + "]"; }, file.byte_level));
}

std::vector<AddedTokenPattern> patterns(const HfTokenizerFile& file, bool normalized,
                                        const TextNormalizer& normalizer) {
  std::vector<AddedTokenPattern> out;
  for (const HfAddedToken& t : file.added_tokens) {
    if (t.normalized != normalized) continue;
    std::string content = normalized ? normalizer.normalize(t.content) : t.content;
    if (content.empty()) continue;  // nothing left to match
    out.push_back({std::move(content), t.id, t.lstrip, t.rstrip});
  }
  return out;
}

// A character-level model must have a token for every character: its own,
// byte-fallback tokens for all bytes, or the unknown token. The library
// would drop a character without one, silently.
CharPairOptions character_options(const HfTokenizerFile& file,
                                  const std::shared_ptr<const Gpt2Vocabulary>& vocabulary) {
  CharPairOptions options;
  options.ignore_merges = file.ignore_merges;
  options.byte_fallback = file.byte_fallback;
  options.fuse_unk = file.fuse_unk;
  if (file.byte_level) return options;
  if (!file.unk_token.empty()) {
    if (const auto id = vocabulary->id(file.unk_token)) options.unk_id = *id;
  }
  if (options.unk_id >= 0 || CharPairEncoder(vocabulary, options).covers_every_byte()) {
    return options;
  }
  const std::string where = file.path + ": ";
  if (!file.unk_token.empty()) {
    throw std::runtime_error(where + "model.unk_token: '" + file.unk_token +
                             "' is not in model.vocab, and byte_fallback does not cover every "
                             "byte (<0x00> ... <0xFF>)");
  }
  throw std::runtime_error(where +
                           "model.unk_token: missing: a character outside model.vocab would be "
                           "dropped (a character-level model needs byte_fallback with all of "
                           "<0x00> ... <0xFF>, or an unk_token)");
}

}  // namespace

const std::vector<std::string>& HfTokenizer::end_of_text_names() {
  static const std::vector<std::string> names{"<|endoftext|>", "<|end_of_text|>", "</s>"};
  return names;
}

HfTokenizerTables::HfTokenizerTables(const HfTokenizerFile& file)
    : path(file.path),
      vocabulary(vocabulary_of(file)),
      byte_level(file.byte_level),
      ignore_merges(file.ignore_merges),
      characters(character_options(file, vocabulary)),
      normalizer(file.normalizers),
      raw_splitter(patterns(file, false, normalizer)),
      normalized_splitter(patterns(file, true, normalizer)),
      add_prefix_space(file.add_prefix_space),
      split_pattern(file.split_pattern),
      metaspace(file.metaspace),
      metaspace_settings(file.metaspace_settings),
      prefix_ids(file.prefix_ids),
      decoders(file.decoders),
      end_of_text(-1),
      vocab_size(vocabulary->size()) {
  for (size_t i = 0; i < file.added_tokens.size(); ++i) {
    const HfAddedToken& t = file.added_tokens[i];
    // An id shared with a different vocabulary token would decode two ways.
    if (uint64_t(t.id) < vocabulary->size() && !vocabulary->token(t.id).empty() &&
        vocabulary->token(t.id) != t.content) {
      throw std::runtime_error(path + ": added_tokens[" + std::to_string(i) +
                               "].id: " + std::to_string(t.id) + " is model.vocab's '" +
                               vocabulary->token(t.id) + "', not '" + t.content + "'");
    }
    added_content[t.id] = t.content;
    vocab_size = std::max(vocab_size, uint64_t(t.id) + 1);
  }
  for (const std::string& name : HfTokenizer::end_of_text_names()) {
    for (const HfAddedToken& t : file.added_tokens) {
      if (end_of_text < 0 && t.content == name) end_of_text = t.id;
    }
    if (end_of_text < 0) end_of_text = vocabulary->id(name).value_or(-1);
    if (end_of_text >= 0) break;
  }
  if (end_of_text < 0) {
    throw std::runtime_error(path +
                             ": added_tokens: no '<|endoftext|>', '<|end_of_text|>' or '</s>' "
                             "token (nor in model.vocab) to end documents with");
  }
  silent_ids.insert(end_of_text);
  silent_ids.insert(prefix_ids.begin(), prefix_ids.end());
}

std::unique_ptr<HfTokenizer> HfTokenizer::load(const std::string& path) {
  return std::make_unique<HfTokenizer>(
      std::make_shared<const HfTokenizerTables>(HfTokenizerFile::load(path)));
}

HfTokenizer::HfTokenizer(std::shared_ptr<const HfTokenizerTables> tables)
    : tables_(std::move(tables)), metaspace_(tables_->metaspace_settings) {
  if (tables_->byte_level) {
    bytes_.emplace(tables_->vocabulary, MergeOrder::kLeftmostFirst, tables_->ignore_merges);
  } else {
    characters_.emplace(tables_->vocabulary, tables_->characters);
  }
}

std::unique_ptr<Tokenizer> HfTokenizer::clone() const {
  return std::make_unique<HfTokenizer>(tables_);
}

void HfTokenizer::encode(std::string_view text, std::vector<int32_t>& out) {
  out.insert(out.end(), tables_->prefix_ids.begin(), tables_->prefix_ids.end());
  raw_segments_.clear();
  tables_->raw_splitter.split(text, raw_segments_);
  for (const TextSegment& raw : raw_segments_) {
    if (raw.token_id >= 0) {
      out.push_back(raw.token_id);
      continue;
    }
    const bool raw_starts_input = raw.text.data() == text.data();
    if (tables_->normalizer.empty() && tables_->normalized_splitter.empty()) {
      encode_plain(raw.text, raw_starts_input, out);
      continue;
    }
    // Segments of `normal` are views into it, so it lives through the loop.
    const std::string normal = tables_->normalizer.normalize(raw.text);
    normalized_segments_.clear();
    tables_->normalized_splitter.split(normal, normalized_segments_);
    for (const TextSegment& segment : normalized_segments_) {
      if (segment.token_id >= 0) {
        out.push_back(segment.token_id);
      } else {
        encode_plain(segment.text, raw_starts_input && segment.text.data() == normal.data(), out);
      }
    }
  }
}

void HfTokenizer::encode_plain(std::string_view text, bool starts_input,
                               std::vector<int32_t>& out) {
  pieces_.clear();
  if (!tables_->byte_level) {
    if (tables_->metaspace) {
      metaspace_.split(text, starts_input, pieces_);
    } else {
      pieces_.push_back(text);
    }
    for (const std::string_view piece : pieces_) characters_->encode_piece(piece, out);
    return;
  }
  if (tables_->add_prefix_space && text[0] != ' ') {
    prefixed_.assign(1, ' ');
    prefixed_.append(text);
    text = prefixed_;
  }
  switch (tables_->split_pattern) {
    case SplitPattern::kNone:
      pieces_.push_back(text);
      break;
    case SplitPattern::kGpt2:
      gpt2_.split(text, pieces_);
      break;
    case SplitPattern::kLlama3:
      llama3_.split(text, pieces_);
      break;
  }
  for (const std::string_view piece : pieces_) bytes_->encode_piece(piece, out);
}

std::string HfTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  std::vector<std::string> tokens;
  for (const int32_t id : ids) {
    if (tables_->silent_ids.count(id)) continue;
    const auto added = tables_->added_content.find(id);
    if (!tables_->byte_level) {
      if (added != tables_->added_content.end()) {
        tokens.push_back(added->second);
      } else if (id >= 0 && uint64_t(id) < tables_->vocabulary->size()) {
        tokens.push_back(tables_->vocabulary->token(id));
      } else {
        throw std::out_of_range(tables_->path + ": id " + std::to_string(id) +
                                " not in vocabulary");
      }
      continue;
    }
    if (added != tables_->added_content.end()) {
      out += added->second;
      continue;
    }
    try {
      bytes_->append_token_bytes(id, out);
    } catch (const std::out_of_range& e) {
      throw std::out_of_range(tables_->path + ": " + e.what());
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(tables_->path + ": " + e.what());
    }
  }
  if (!tables_->byte_level) return decode_token_strings(std::move(tokens), tables_->decoders);
  return out;
}

}  // namespace cmpi::data
