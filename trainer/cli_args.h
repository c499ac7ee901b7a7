// Command line of cmpi-train:
//   cmpi-train --config FILE.yaml [--set key.path=value ...] [--dump-tensors DIR]
//              [--print-config]
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace cmpi::trainer {

class UsageError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct CliArgs {
  std::string config_path;
  std::vector<std::string> overrides;  // "key.path=value"
  std::string dump_tensors_dir;
  bool help = false;
  bool print_config = false;  // print the resolved config and exit

  static CliArgs parse(int argc, char** argv);  // throws UsageError
  static const char* usage();
};

}  // namespace cmpi::trainer
