// The command line parsed as cmpi-train's main() would see it, for the
// tests of trainer/cli_args.h (cli_args_test, restart_pieces_test).
#pragma once

#include <string>
#include <vector>

#include "trainer/cli_args.h"

namespace cmpi::trainer::testing {

// `words` after the program name.
inline CliArgs parse_cli(std::vector<std::string> words) {
  words.insert(words.begin(), "cmpi-train");
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  return CliArgs::parse(int(argv.size()), argv.data());
}

}  // namespace cmpi::trainer::testing
