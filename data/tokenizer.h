// What cmpi-data needs from a tokenizer: text to token ids, the
// end-of-document id appended after each document, and the vocabulary size
// that bounds the ids. Instances own their tables and caches and are not
// thread-safe; clone() gives each worker thread its own (tables are shared
// read-only, caches are not).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace cmpi::data {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // Appends the ids of `text` to `out`. The gpt2 and bytes tokenizers never
  // emit end_of_document(): the text "<|endoftext|>" is encoded as ordinary
  // text, as GPT-2's encoder does. A tokenizer.json tokenizer matches its
  // added tokens in the text, "<|endoftext|>" included, as Hugging Face's
  // encode does.
  virtual void encode(std::string_view text, std::vector<int32_t>& out) = 0;
  // The bytes the ids stand for (end-of-document ids decode to nothing).
  virtual std::string decode(const std::vector<int32_t>& ids) const = 0;
  virtual uint64_t vocab_size() const = 0;
  virtual int32_t end_of_document() const = 0;
  // The id a generation starts from: the post-processor's beginning-of-text
  // token where a tokenizer.json adds one (Llama's <s>, <|begin_of_text|>),
  // else the end-of-document id, as GPT-2 and GPT-NeoX use it.
  virtual int32_t begin_of_document() const { return end_of_document(); }
  virtual std::unique_ptr<Tokenizer> clone() const = 0;
  virtual std::string name() const = 0;
};

// "bytes"; "gpt2" with its encoder.json/vocab.json and vocab.bpe/merges.txt;
// or the path of a Hugging Face tokenizer.json (any name ending in ".json").
// Throws std::invalid_argument for an unknown name or missing or extra file
// arguments, std::runtime_error for a file that cannot be used.
std::unique_ptr<Tokenizer> make_tokenizer(const std::string& name, const std::string& vocab_file,
                                          const std::string& merge_file);

}  // namespace cmpi::data
