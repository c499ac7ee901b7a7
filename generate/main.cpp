// cmpi-generate: text from a trained or imported GPT on this one process
// (no mpirun: MPI is initialised here for the model's process group of
// size 1). Streams each prompt's continuation to stdout token by token;
// what it loaded, the seed and the speed go to stderr. A usage mistake or
// bad input (a missing checkpoint, a prompt longer than model.seq_len, a
// token id outside the vocabulary) is one line "cmpi-generate: ..." and
// exit code 2.
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "data/tokenizer.h"
#include "generate/generate_args.h"
#include "generate/model_loader.h"
#include "generate/model_source.h"
#include "generate/text_stream.h"
#include "generate/token_generator.h"

namespace {

constexpr const char* kProgram = "cmpi-generate";

// MPI for the life of main, whatever path leaves it.
class MpiScope {
 public:
  MpiScope(int* argc, char*** argv) { MPI_Init(argc, argv); }
  ~MpiScope() { MPI_Finalize(); }
  MpiScope(const MpiScope&) = delete;
  MpiScope& operator=(const MpiScope&) = delete;
};

void write(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

// The tokenizer named by --tokenizer or the model's source; null when
// neither names one (token ids in and out).
std::unique_ptr<cmpi::data::Tokenizer> open_tokenizer(const cmpi::generate::GenerateArgs& args,
                                                      const cmpi::generate::ModelSource& source) {
  const std::string name = args.tokenizer.empty() ? source.tokenizer : args.tokenizer;
  if (name.empty()) {
    if (!args.text_prompts.empty())
      throw std::runtime_error(source.dir +
                               " names no tokenizer (data.tokenizer, or a tokenizer.json beside "
                               "config.json): give --tokenizer bytes|FILE.json, or prompts as "
                               "--ids");
    return nullptr;
  }
  auto tokenizer = cmpi::data::make_tokenizer(name, "", "");
  if (int64_t(tokenizer->vocab_size()) > source.config.model.vocab_size)
    throw std::runtime_error("tokenizer " + name + " has " +
                             std::to_string(tokenizer->vocab_size()) +
                             " ids, more than the model's model.vocab_size " +
                             std::to_string(source.config.model.vocab_size));
  return tokenizer;
}

int run(const cmpi::generate::GenerateArgs& parsed) {
  using namespace cmpi::generate;
  GenerateArgs args = parsed;
  if (!args.seed_given) args.sampling.seed = std::random_device{}();
  torch::set_num_threads(int(args.threads));
  const ModelSource source = find_model_source(args.model_path);
  const auto tokenizer = open_tokenizer(args, source);
  const bool emit_text = args.emit.empty() ? tokenizer != nullptr : args.emit == "text";
  if (emit_text && !tokenizer)
    throw std::runtime_error("--emit text needs a tokenizer: " + source.dir +
                             " names none; give --tokenizer");
  std::vector<std::vector<int64_t>> prompts = args.id_prompts;
  for (const auto& text : args.text_prompts) {
    std::vector<int32_t> ids;
    if (args.begin_of_document) ids.push_back(tokenizer->begin_of_document());
    tokenizer->encode(text, ids);
    prompts.emplace_back(ids.begin(), ids.end());
  }
  // Every prompt is checked before anything is loaded or printed.
  for (size_t p = 0; p < prompts.size(); ++p) {
    try {
      check_prompt(prompts[p], source.config.model.vocab_size, source.config.model.seq_len);
    } catch (const std::invalid_argument& e) {
      const std::string which = prompts.size() > 1 ? "prompt " + std::to_string(p + 1) + ": " : "";
      throw std::invalid_argument(which + e.what());
    }
  }
  const auto loaded = LoadedModel::load(source);
  TokenGenerator generator(loaded->model());
  GenerationSettings settings;
  settings.max_new_tokens = args.max_new_tokens;
  settings.end_of_document = tokenizer ? tokenizer->end_of_document() : source.end_of_document;
  settings.use_cache = args.use_cache;
  std::fprintf(stderr, "%s: %s; %s, seed %llu; KV cache %s; tokenizer %s\n", kProgram,
               source.description().c_str(), describe(args.sampling).c_str(),
               (unsigned long long)args.sampling.seed, args.use_cache ? "on" : "off",
               tokenizer ? tokenizer->name().c_str() : "none (token ids)");
  for (size_t p = 0; p < prompts.size(); ++p) {
    // Each prompt samples from the seed afresh: one prompt's text does not
    // depend on the prompts before it.
    TokenSampler sampler(args.sampling);
    std::unique_ptr<TextStream> stream;
    if (emit_text) {
      stream = std::make_unique<TextStream>(*tokenizer);
      write(!args.text_prompts.empty()
                ? args.text_prompts[p]
                : tokenizer->decode(std::vector<int32_t>(prompts[p].begin(), prompts[p].end())));
    }
    bool first = true;
    const auto started = std::chrono::steady_clock::now();
    const Generated generated = generator.run(prompts[p], settings, sampler, [&](int64_t id) {
      if (stream) {
        write(stream->push(id));
      } else {
        write((first ? "" : " ") + std::to_string(id));
        first = false;
      }
    });
    if (stream) write(stream->finish());
    write("\n");
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::fprintf(stderr,
                 "%s: prompt %zu: %zu prompt tokens, %zu new in %.3f s (%.1f tokens/s), "
                 "stopped by %s\n",
                 kProgram, p + 1, prompts[p].size(), generated.tokens.size(), seconds,
                 double(generated.tokens.size()) / seconds, describe(generated.stop));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  cmpi::generate::GenerateArgs args;
  try {
    args = cmpi::generate::GenerateArgs::parse(argc, argv);
  } catch (const cmpi::generate::UsageError& e) {
    std::fprintf(stderr, "%s: %s (see %s --help)\n", kProgram, e.what(), kProgram);
    return 2;
  }
  if (args.help) {
    std::fputs(cmpi::generate::GenerateArgs::usage(), stdout);
    return 0;
  }
  MpiScope mpi(&argc, &argv);
  try {
    return run(args);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: %s\n", kProgram, e.what());
    return 2;
  }
}
