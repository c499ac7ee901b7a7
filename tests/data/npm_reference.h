// Running a JavaScript reference implementation from the reference tests:
// npm packages are installed into a folder of the build tree (never into the
// repository), and a script runs in one node process over all texts, read
// from a JSON array, writing its answer as JSON. When node, npm or a package
// cannot be had the tests exit 77, which CTest reports as skipped.
#pragma once

#include <string>
#include <vector>

#include "data/json_value.h"

namespace cmpi::data::testing {

// `s` as a JSON string literal (control bytes escaped; other bytes as they
// are, so UTF-8 stays UTF-8).
std::string json_string(const std::string& s);

std::string read_all(const std::string& path);

// Installs `packages` ("name@version") into `npm_dir` unless `ready_file`
// already exists. Returns "" when ready, else why not (with npm's log).
std::string install_npm_packages(const std::string& npm_dir,
                                 const std::vector<std::string>& packages,
                                 const std::string& ready_file);

// Writes `texts` to NPM_DIR/texts.json and `script` to NPM_DIR/NAME.js, runs
// `node NAME.js texts.json answer.json` in `npm_dir` and returns the parsed
// answer. Throws std::runtime_error if node fails.
JsonValue run_node(const std::string& npm_dir, const std::string& name, const std::string& script,
                   const std::vector<std::string>& texts);

// An array of arrays of integers (one id list per text) as vectors.
std::vector<std::vector<int32_t>> id_lists(const JsonValue& value);

}  // namespace cmpi::data::testing
