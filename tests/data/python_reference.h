// Running the Python reference implementations from the reference tests:
// the project's Python environment (scripts/setup.sh installs it outside the
// checkout; tiktoken and Hugging Face's tokenizers) runs a script of
// tests/data over all texts at once, read from a JSON array in a file,
// writing its answer as JSON to another file. GPT-2's vocabulary comes from
// its published BPE ranks (gpt2.tiktoken, which setup fetches from PyPI),
// turned into encoder.json and vocab.bpe by gpt2_vocab_files.py. Without the
// environment or the ranks the tests exit 77, which CTest reports as skipped.
#pragma once

#include <string>
#include <vector>

#include "data/json_value.h"

namespace cmpi::data::testing {

// `s` as a JSON string literal: control characters (C0 and C1) and U+FEFF
// escaped, so that failure messages show them; other bytes as they are, so
// UTF-8 stays UTF-8.
std::string json_string(const std::string& s);

std::string read_all(const std::string& path);

// The reference folder's gpt2.tiktoken.
std::string gpt2_ranks_path();

// Checks that the project's Python imports `modules`. Returns "" when it
// does, else a one-line reason to skip.
std::string check_python(const std::vector<std::string>& modules);

// Checks that the project's Python imports `modules` and that GPT-2's ranks
// are there, then writes VOCAB_DIR/encoder.json and VOCAB_DIR/vocab.bpe from
// the ranks (nothing is redone when they are up to date). Returns "" when
// ready, else a one-line reason to skip. Throws std::runtime_error when the
// environment is there but the derivation fails, which is a test failure.
std::string prepare_gpt2_reference(const std::vector<std::string>& modules,
                                   const std::string& vocab_dir);

// Writes `texts` to WORK_DIR/texts.json, runs
// `python SCRIPT texts.json answer.json ARGS...` (SCRIPT from tests/data) in
// `work_dir` and returns the parsed answer. Throws std::runtime_error if the
// script fails.
JsonValue run_python(const std::string& work_dir, const std::string& script,
                     const std::vector<std::string>& texts,
                     const std::vector<std::string>& args = {});

// An array of arrays of integers (one id list per text) as vectors.
std::vector<std::vector<int32_t>> id_lists(const JsonValue& value);

}  // namespace cmpi::data::testing
