// A Hugging Face tokenizer.json (data/hf_tokenizer_file.h): parsed and
// checked, then, if accepted, built into a tokenizer that encodes and
// decodes a short text, and decodes ids of
// its vocabulary's range. A refusal is a std::runtime_error naming the file.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/fuzz/fuzz_check.h"
#include "data/hf_tokenizer.h"
#include "data/hf_tokenizer_file.h"

using namespace cmpi::data;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string json(reinterpret_cast<const char*>(data), size);
  std::shared_ptr<const HfTokenizerTables> tables;
  try {
    tables =
        std::make_shared<const HfTokenizerTables>(HfTokenizerFile::parse(json, cmpi::fuzz::kLabel));
  } catch (const std::runtime_error& e) {
    cmpi::fuzz::require_labelled(e.what());
    return 0;
  }
  HfTokenizer tokenizer(tables);
  std::vector<int32_t> ids;
  tokenizer.encode("Hello world! \xE2\x96\x81 caf\xC3\xA9 <|endoftext|> 123\n\t", ids);
  // Ids the tokenizer produced decode.
  tokenizer.decode(ids);
  // Any id below vocab_size() decodes or is refused naming the file (a gap
  // in the vocabulary).
  for (int32_t& id : ids) id = int32_t(uint64_t(uint32_t(id)) * 7919 % tokenizer.vocab_size());
  try {
    tokenizer.decode(ids);
  } catch (const std::exception& e) {
    cmpi::fuzz::require_labelled(e.what());
  }
  return 0;
}
