// cmpi-data: text or JSONL files -> Megatron/NeoX indexed dataset
// (PREFIX.bin + PREFIX.idx). Parses the command line, builds the tokenizer,
// runs convert_to_indexed_dataset and, with --verify, reopens the result and
// checks every token against the vocabulary. Exit status 0 on success, 1 on
// any error (printed on stderr), 2 on bad usage.
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <string>

#include "data/dataset_conversion.h"
#include "data/indexed_dataset.h"
#include "data/tokenizer.h"

namespace {

const char* kUsage = R"(usage: cmpi-data --input FILE [--input FILE ...] --output-prefix PREFIX
                 --tokenizer gpt2|bytes|PATH/tokenizer.json
                 [--vocab-file encoder.json --merge-file vocab.bpe]
                 [--format auto|jsonl|text] [--text-documents file|paragraphs]
                 [--dtype auto|uint16|int32] [--workers N] [--verify] [--quiet]

  --input           an input file; repeatable. *.jsonl/*.json are JSONL (the "text" field of
                    each line is a document), anything else text (see --text-documents)
  --output-prefix   writes PREFIX.bin and PREFIX.idx (via temporary names, renamed at the end)
  --tokenizer       gpt2 (needs --vocab-file and --merge-file), bytes (ids 0-255, 256 = end), or
                    a Hugging Face tokenizer.json of a BPE model (GPT-2, GPT-NeoX, Llama 3:
                    byte-level; Llama 2, Mistral: SentencePiece-style; any path ending in
                    .json): its <|endoftext|>, <|end_of_text|> or </s> ends each document
  --format          force every input to jsonl or text (default auto: by extension)
  --text-documents  file: a text file is one document (default); paragraphs: documents are
                    separated by blank lines
  --dtype           token type on disk (default auto: uint16 if the vocabulary fits)
  --workers         tokenizer threads (default 1)
  --verify          reopen the dataset and check every token is inside the vocabulary
  --quiet           no progress lines
)";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace

int main(int argc, char** argv) {
  using namespace cmpi::data;
  try {
    ConversionOptions options;
    std::string tokenizer_name, vocab_file, merge_file;
    bool verify = false, quiet = false;
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      const auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw UsageError(arg + " needs a value");
        return argv[++i];
      };
      if (arg == "--help" || arg == "-h") {
        std::cout << kUsage;
        return 0;
      } else if (arg == "--input") {
        options.inputs.push_back(value());
      } else if (arg == "--output-prefix") {
        options.output_prefix = value();
      } else if (arg == "--tokenizer") {
        tokenizer_name = value();
      } else if (arg == "--vocab-file") {
        vocab_file = value();
      } else if (arg == "--merge-file") {
        merge_file = value();
      } else if (arg == "--format") {
        options.format = parse_input_format(value());
      } else if (arg == "--text-documents") {
        options.text_documents = parse_text_documents(value());
      } else if (arg == "--dtype") {
        const std::string dtype = value();
        if (dtype != "auto") options.dtype = parse_dtype(dtype);
      } else if (arg == "--workers") {
        const std::string n = value();
        char* end = nullptr;
        const long workers = std::strtol(n.c_str(), &end, 10);
        if (*end || workers < 1 || workers > 1024) {
          throw UsageError("--workers wants an integer in 1..1024, not '" + n + "'");
        }
        options.workers = int(workers);
      } else if (arg == "--verify") {
        verify = true;
      } else if (arg == "--quiet") {
        quiet = true;
      } else {
        throw UsageError("unknown argument '" + arg + "'");
      }
    }
    if (options.inputs.empty()) throw UsageError("no --input");
    if (options.output_prefix.empty()) throw UsageError("no --output-prefix");
    if (tokenizer_name.empty()) throw UsageError("no --tokenizer");
    if (quiet) options.progress_interval_s = 0;

    const auto tokenizer = make_tokenizer(tokenizer_name, vocab_file, merge_file);
    const ConversionReport report =
        convert_to_indexed_dataset(options, *tokenizer, quiet ? nullptr : &std::cerr);
    std::cerr << "cmpi-data: wrote " << options.output_prefix << ".bin/.idx: " << report.documents
              << " documents, " << report.tokens << " " << dtype_name(report.dtype) << " tokens in "
              << report.seconds << " s, " << static_cast<uint64_t>(report.tokens_per_second())
              << " tokens/s (" << options.workers << " workers)\n";
    if (verify) {
      const IndexedDataset dataset(options.output_prefix);
      dataset.validate_tokens(tokenizer->vocab_size());
      if (dataset.documents() != report.documents || dataset.total_tokens() != report.tokens) {
        throw std::runtime_error(options.output_prefix + ": read back " +
                                 std::to_string(dataset.documents()) + " documents and " +
                                 std::to_string(dataset.total_tokens()) + " tokens");
      }
      std::cerr << "cmpi-data: verified " << dataset.sequences() << " sequences\n";
    }
    return 0;
  } catch (const UsageError& e) {
    std::cerr << "cmpi-data: " << e.what() << "\n" << kUsage;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "cmpi-data: error: " << e.what() << "\n";
    return 1;
  }
}
