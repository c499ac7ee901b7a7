// Name -> tokenizer; the GPT-2 files are required only for "gpt2".
#include "data/tokenizer.h"

#include <stdexcept>

#include "data/byte_tokenizer.h"
#include "data/gpt2_tokenizer.h"

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
  throw std::invalid_argument("unknown tokenizer '" + name + "' (expected gpt2 or bytes)");
}

}  // namespace cmpi::data
