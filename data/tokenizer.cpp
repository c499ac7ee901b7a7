// Name -> tokenizer; the GPT-2 files are required only for "gpt2", and a
// name ending in ".json" is a tokenizer.json path.
#include "data/tokenizer.h"

#include <stdexcept>

#include "data/byte_tokenizer.h"
#include "data/gpt2_tokenizer.h"
#include "data/hf_tokenizer.h"

namespace cmpi::data {

std::unique_ptr<Tokenizer> make_tokenizer(const std::string& name, const std::string& vocab_file,
                                          const std::string& merge_file) {
  if (name == "bytes") return std::make_unique<ByteTokenizer>();
  if (name == "gpt2") {
    if (vocab_file.empty() || merge_file.empty()) {
      throw std::invalid_argument(
          "the gpt2 tokenizer needs --vocab-file (encoder.json) and --merge-file (vocab.bpe)");
    }
    return std::make_unique<Gpt2Tokenizer>(
        std::make_shared<const Gpt2Vocabulary>(Gpt2Vocabulary::load(vocab_file, merge_file)));
  }
  const std::string json = ".json";
  if (name.size() > json.size() &&
      name.compare(name.size() - json.size(), json.size(), json) == 0) {
    if (!vocab_file.empty() || !merge_file.empty()) {
      throw std::invalid_argument("--vocab-file and --merge-file are for the gpt2 tokenizer; " +
                                  name + " holds its vocabulary and merges");
    }
    return HfTokenizer::load(name);
  }
  throw std::invalid_argument("unknown tokenizer '" + name +
                              "' (expected gpt2, bytes or the path of a tokenizer.json)");
}

}  // namespace cmpi::data
