// Command line of cmpi-generate:
//   cmpi-generate --model PATH (--prompt TEXT | --ids 1,2,3 | --prompt-file FILE |
//                 --ids-file FILE) [--max-new-tokens N] [--temperature T] [--top-k K]
//                 [--top-p P] [--seed S] [--tokenizer NAME] [--no-bos] [--emit text|ids]
//                 [--no-cache] [--threads N]
// Every mistake is a UsageError whose message names the culprit in one line.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "generate/token_sampler.h"

namespace cmpi::generate {

class UsageError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct GenerateArgs {
  std::string model_path;
  // Exactly one prompt source: text prompts (--prompt, or one per line of
  // --prompt-file) or token-id prompts (--ids, or one list per line of
  // --ids-file).
  std::vector<std::string> text_prompts;
  std::vector<std::vector<int64_t>> id_prompts;
  int64_t max_new_tokens = 64;
  SamplingOptions sampling;  // seed: --seed, else drawn (printed either way)
  bool seed_given = false;
  std::string tokenizer;          // overrides the run's data.tokenizer
  bool begin_of_document = true;  // text prompts start with the tokenizer's begin id
  std::string emit;               // "text" | "ids"; empty: text where a tokenizer is known
  bool use_cache = true;
  int64_t threads = 1;  // LibTorch intra-op threads
  bool help = false;

  // Throws UsageError.
  static GenerateArgs parse(int argc, const char* const* argv);
  static const char* usage();
};

// "1,2,3" -> {1, 2, 3}; throws UsageError naming `what` for anything else.
std::vector<int64_t> parse_ids(const std::string& text, const std::string& what);

}  // namespace cmpi::generate
