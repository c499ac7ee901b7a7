// Builds the shared tables once from the file (vocabulary and merges through
// Gpt2Vocabulary::from_tables, the two added-token splitters), then encodes
// segment by segment as the header lists.
#include "data/hf_tokenizer.h"

#include <algorithm>
#include <stdexcept>

namespace cmpi::data {
namespace {

std::shared_ptr<const Gpt2Vocabulary> vocabulary_of(const HfTokenizerFile& file) {
  return std::make_shared<const Gpt2Vocabulary>(Gpt2Vocabulary::from_tables(
      file.vocab, file.merges, file.path, "model.vocab",
      [](size_t i) { return "model.merges[" + std::to_string(i) + "]"; }));
}

std::vector<AddedTokenPattern> patterns(const HfTokenizerFile& file, bool normalized,
                                        const UnicodeNormalizer& normalizer) {
  std::vector<AddedTokenPattern> out;
  for (const HfAddedToken& t : file.added_tokens) {
    if (t.normalized != normalized) continue;
    std::string content = normalized ? normalizer.normalize(t.content) : t.content;
    if (content.empty()) continue;  // nothing left to match
    out.push_back({std::move(content), t.id, t.lstrip, t.rstrip});
  }
  return out;
}

}  // namespace

HfTokenizerTables::HfTokenizerTables(const HfTokenizerFile& file)
    : path(file.path),
      vocabulary(vocabulary_of(file)),
      ignore_merges(file.ignore_merges),
      normalizer(file.normalizers),
      raw_splitter(patterns(file, false, normalizer)),
      normalized_splitter(patterns(file, true, normalizer)),
      add_prefix_space(file.add_prefix_space),
      split_by_gpt2_pattern(file.split_by_gpt2_pattern),
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
    if (t.content == HfTokenizer::kEndOfText) end_of_text = t.id;
  }
  if (end_of_text < 0) {
    const auto in_vocab = vocabulary->id(HfTokenizer::kEndOfText);
    if (!in_vocab) {
      throw std::runtime_error(path + ": added_tokens: no '" + HfTokenizer::kEndOfText +
                               "' token (nor in model.vocab) to end documents with");
    }
    end_of_text = *in_vocab;
  }
}

std::unique_ptr<HfTokenizer> HfTokenizer::load(const std::string& path) {
  return std::make_unique<HfTokenizer>(
      std::make_shared<const HfTokenizerTables>(HfTokenizerFile::load(path)));
}

HfTokenizer::HfTokenizer(std::shared_ptr<const HfTokenizerTables> tables)
    : tables_(std::move(tables)),
      encoder_(tables_->vocabulary, MergeOrder::kLeftmostFirst, tables_->ignore_merges) {}

std::unique_ptr<Tokenizer> HfTokenizer::clone() const {
  return std::make_unique<HfTokenizer>(tables_);
}

void HfTokenizer::encode(std::string_view text, std::vector<int32_t>& out) {
  raw_segments_.clear();
  tables_->raw_splitter.split(text, raw_segments_);
  for (const TextSegment& raw : raw_segments_) {
    if (raw.token_id >= 0) {
      out.push_back(raw.token_id);
      continue;
    }
    if (tables_->normalizer.empty() && tables_->normalized_splitter.empty()) {
      encode_plain(raw.text, out);
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
        encode_plain(segment.text, out);
      }
    }
  }
}

void HfTokenizer::encode_plain(std::string_view text, std::vector<int32_t>& out) {
  if (tables_->add_prefix_space && text[0] != ' ') {
    prefixed_.assign(1, ' ');
    prefixed_.append(text);
    text = prefixed_;
  }
  if (!tables_->split_by_gpt2_pattern) {
    encoder_.encode_piece(text, out);
    return;
  }
  pieces_.clear();
  pre_tokenizer_.split(text, pieces_);
  for (const std::string_view piece : pieces_) encoder_.encode_piece(piece, out);
}

std::string HfTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  for (const int32_t id : ids) {
    if (id == tables_->end_of_text) continue;
    if (const auto added = tables_->added_content.find(id); added != tables_->added_content.end()) {
      out += added->second;
      continue;
    }
    try {
      encoder_.append_token_bytes(id, out);
    } catch (const std::out_of_range& e) {
      throw std::out_of_range(tables_->path + ": " + e.what());
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(tables_->path + ": " + e.what());
    }
  }
  return out;
}

}  // namespace cmpi::data
