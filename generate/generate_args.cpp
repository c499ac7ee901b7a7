#include "generate/generate_args.h"

#include <cerrno>
#include <cstdlib>
#include <fstream>

namespace cmpi::generate {
namespace {

int64_t parse_integer(const std::string& text, const std::string& option, int64_t min) {
  errno = 0;
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value < min)
    throw UsageError(option + " '" + text + "': expected a whole number >= " + std::to_string(min));
  return value;
}

double parse_real(const std::string& text, const std::string& option) {
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno != 0)
    throw UsageError(option + " '" + text + "': expected a number");
  return value;
}

std::vector<std::string> read_lines(const std::string& path, const std::string& option) {
  std::ifstream in(path);
  if (!in) throw UsageError(option + " " + path + ": cannot read it");
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) lines.push_back(line);
  }
  if (lines.empty()) throw UsageError(option + " " + path + ": holds no prompt (no line)");
  return lines;
}

}  // namespace

std::vector<int64_t> parse_ids(const std::string& text, const std::string& what) {
  std::vector<int64_t> ids;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    ids.push_back(parse_integer(item, what, 0));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return ids;
}

const char* GenerateArgs::usage() {
  return "usage: cmpi-generate --model PATH (--prompt TEXT | --ids 1,2,3 | --prompt-file FILE |\n"
         "                     --ids-file FILE) [--max-new-tokens N] [--temperature T]\n"
         "                     [--top-k K] [--top-p P] [--seed S] [--tokenizer NAME]\n"
         "                     [--no-bos] [--emit text|ids] [--no-cache] [--threads N]\n"
         "  --model PATH        a checkpoint directory (any layout), a run directory (its\n"
         "                      newest checkpoint) or a Hugging Face GPT-NeoX/GPT-2/Llama\n"
         "                      directory\n"
         "  --prompt TEXT       a prompt, through the run's tokenizer (data.tokenizer)\n"
         "  --ids 1,2,3         a prompt as token ids\n"
         "  --prompt-file FILE  one text prompt per line; --ids-file FILE: one id list per line\n"
         "  --max-new-tokens N  at most N new tokens per prompt (default 64); generation also\n"
         "                      stops at the end-of-document id and at model.seq_len tokens\n"
         "  --temperature T     0 (default): greedy; > 0: sampled from softmax(logits / T)\n"
         "  --top-k K           sample among the K highest (0: all)\n"
         "  --top-p P           sample among the fewest highest reaching probability P\n"
         "  --seed S            the sampler's seed (default: drawn; printed either way)\n"
         "  --tokenizer NAME    bytes, or a tokenizer.json path, instead of the run's\n"
         "  --no-bos            do not start text prompts with the begin-of-document id\n"
         "  --emit text|ids     stream text (default with a tokenizer) or token ids\n"
         "  --no-cache          rerun the whole sequence for every token (no KV cache)\n"
         "  --threads N         LibTorch threads (default 1)\n";
}

GenerateArgs GenerateArgs::parse(int argc, const char* const* argv) {
  GenerateArgs args;
  std::vector<std::string> sources;  // the prompt options given, for the one-of check
  for (int i = 1; i < argc; ++i) {
    const std::string option = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(option + " needs a value");
      return argv[++i];
    };
    if (option == "--help" || option == "-h") {
      args.help = true;
    } else if (option == "--model") {
      args.model_path = value();
    } else if (option == "--prompt") {
      args.text_prompts.push_back(value());
      sources.push_back(option);
    } else if (option == "--ids") {
      args.id_prompts.push_back(parse_ids(value(), option));
      sources.push_back(option);
    } else if (option == "--prompt-file") {
      args.text_prompts = read_lines(value(), option);
      sources.push_back(option);
    } else if (option == "--ids-file") {
      for (const auto& line : read_lines(value(), option))
        args.id_prompts.push_back(parse_ids(line, option + " line '" + line + "'"));
      sources.push_back(option);
    } else if (option == "--max-new-tokens") {
      args.max_new_tokens = parse_integer(value(), option, 0);
    } else if (option == "--temperature") {
      args.sampling.temperature = parse_real(value(), option);
    } else if (option == "--top-k") {
      args.sampling.top_k = parse_integer(value(), option, 0);
    } else if (option == "--top-p") {
      args.sampling.top_p = parse_real(value(), option);
    } else if (option == "--seed") {
      args.sampling.seed = uint64_t(parse_integer(value(), option, 0));
      args.seed_given = true;
    } else if (option == "--tokenizer") {
      args.tokenizer = value();
    } else if (option == "--no-bos") {
      args.begin_of_document = false;
    } else if (option == "--emit") {
      args.emit = value();
      if (args.emit != "text" && args.emit != "ids")
        throw UsageError("--emit '" + args.emit + "': expected text or ids");
    } else if (option == "--no-cache") {
      args.use_cache = false;
    } else if (option == "--threads") {
      args.threads = parse_integer(value(), option, 1);
    } else {
      throw UsageError("unknown option " + option);
    }
  }
  if (args.help) return args;
  if (args.model_path.empty()) throw UsageError("--model PATH is required");
  if (sources.empty())
    throw UsageError("no prompt: give --prompt, --ids, --prompt-file or --ids-file");
  for (const auto& other : sources)
    if (other != sources[0])
      throw UsageError(sources[0] + " and " + other + ": give one kind of prompt");
  try {
    check_sampling_options(args.sampling);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  return args;
}

}  // namespace cmpi::generate
