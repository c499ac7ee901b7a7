#include "trainer/cli_args.h"

namespace cmpi::trainer {

const char* CliArgs::usage() {
  return "usage: cmpi-train --config FILE.yaml [--set key.path=value ...] [--dump-tensors DIR]\n"
         "                  [--print-config]\n"
         "  --config FILE        run configuration (see configs/ and README.md)\n"
         "  --set key.path=val   override one config value, e.g. --set training.steps=50\n"
         "  --dump-tensors DIR   after the last step, write the gradients and block activations\n"
         "                       as raw float32 (DIR/gradients.f32, DIR/activations.f32)\n"
         "  --print-config       print the fully resolved config (defaults included) and exit\n"
         "Run under MPI: mpirun -np 4 cmpi-train --config configs/tiny.yaml\n";
}

CliArgs CliArgs::parse(int argc, char** argv) {
  CliArgs args;
  auto value_of = [&](int& i, const std::string& flag) -> std::string {
    if (i + 1 >= argc) throw UsageError(flag + " needs a value");
    return argv[++i];
  };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      args.help = true;
    } else if (arg == "--config") {
      args.config_path = value_of(i, arg);
    } else if (arg.rfind("--config=", 0) == 0) {
      args.config_path = arg.substr(9);
    } else if (arg == "--set") {
      std::string kv = value_of(i, arg);
      if (kv.find('=') == std::string::npos || kv.front() == '=')
        throw UsageError("--set expects key.path=value, got '" + kv + "'");
      args.overrides.push_back(kv);
    } else if (arg == "--print-config") {
      args.print_config = true;
    } else if (arg == "--dump-tensors") {
      args.dump_tensors_dir = value_of(i, arg);
    } else {
      throw UsageError("unknown argument '" + arg + "'");
    }
  }
  if (!args.help && args.config_path.empty()) throw UsageError("--config FILE is required");
  return args;
}

}  // namespace cmpi::trainer
