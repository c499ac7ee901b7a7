#include "trainer/cli_args.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace cmpi::trainer {
namespace {

int64_t parse_positive(const std::string& text, const std::string& flag) {
  size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || value < 1 || value > (1 << 24))
    throw UsageError(flag + " expects a whole number in [1, 16777216], got '" + text + "'");
  return value;
}

double parse_positive_real(const std::string& text, const std::string& flag) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !(value > 0) || !std::isfinite(value))
    throw UsageError(flag + " expects a positive number, got '" + text + "'");
  return value;
}

// "inter=25gbit/5us,intra=400gbit/2us" (either part may be left out).
void parse_links(const std::string& text, PlanArgs& plan) {
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string part = text.substr(start, comma - start);
    const size_t eq = part.find('=');
    const std::string name = part.substr(0, eq);
    if (eq == std::string::npos || (name != "inter" && name != "intra"))
      throw UsageError("--plan-link expects inter=RATE/LATENCY,intra=RATE/LATENCY, got '" + text +
                       "'");
    (name == "inter" ? plan.inter_link : plan.intra_link) = part.substr(eq + 1);
    start = comma + 1;
  }
}

}  // namespace

const std::vector<std::string>& CliArgs::flags() {
  static const std::vector<std::string> all = {"--help",
                                               "-h",
                                               "--version",
                                               "--config",
                                               "--set",
                                               "--print-config",
                                               "--dump-tensors",
                                               "--resume",
                                               "--export",
                                               "--export-hf",
                                               "--plan",
                                               "--plan-ranks",
                                               "--plan-ranks-per-node",
                                               "--plan-link",
                                               "--plan-flops",
                                               "--plan-cores",
                                               "--plan-waits",
                                               "--plan-codec-scale",
                                               "--plan-link-efficiency",
                                               "--compare-presets",
                                               "--plan-json",
                                               "--plan-device",
                                               "--plan-cluster",
                                               "--plan-attention",
                                               "--plan-stack"};
  return all;
}

const char* CliArgs::usage() {
  return "usage: cmpi-train --config FILE.yaml [--config MORE.yaml ...] [--set key.path=value "
         "...]\n"
         "                  [--print-config] [--dump-tensors DIR] [--resume [PATH|auto]]\n"
         "                  [--export OUT | --export-hf DIR]\n"
         "                  [--plan [--plan-ranks N] [--plan-ranks-per-node K] [--plan-link L]\n"
         "                   [--plan-flops F] [--plan-cores N] [--plan-waits spin|block]\n"
         "                   [--plan-codec-scale X] [--plan-link-efficiency E]\n"
         "                   [--compare-presets] [--plan-json FILE] [--plan-device D]\n"
         "                   [--plan-cluster C] [--plan-attention flash|materialized]\n"
         "                   [--plan-stack S]]\n"
         "       cmpi-train --version | --help | -h\n"
         "  --config FILE        run configuration (see configs/ and README.md); give it again to\n"
         "                       merge more files in order, later keys winning (a GPT-NeoX\n"
         "                       YAML config is read through its key table: docs/config.md)\n"
         "  --set key.path=val   override one config value, e.g. --set training.steps=50\n"
         "  --dump-tensors DIR   after the last step, write the gradients and block activations\n"
         "                       as float32 tensor files with a small header (magic, dtype,\n"
         "                       shape): DIR/gradients.f32, DIR/activations.f32; with tp = 1\n"
         "                       and ZeRO < 3 also the final weights (DIR/parameters.f32,\n"
         "                       names and shapes in DIR/parameters.txt)\n"
         "  --print-config       print the fully resolved config (defaults included) and exit\n"
         "  --resume [PATH]      continue from a checkpoint: PATH (a checkpoint directory, or\n"
         "                       a checkpoint root: its latest), default the latest complete\n"
         "                       one under checkpoint.dir (<run dir>/checkpoints); any layout\n"
         "  --resume auto        the latest complete checkpoint under checkpoint.dir, or step 0\n"
         "                       when there is none (for restarted jobs: scripts/cmpi-run)\n"
         "  --export OUT         with --resume: write that checkpoint's consolidated weights\n"
         "                       to OUT in the safetensors format and exit (no training)\n"
         "  --export-hf DIR      with --resume: write that checkpoint as a Hugging Face model\n"
         "                       directory (config.json, model.safetensors and the config's\n"
         "                       tokenizer.json): GPT-NeoX for rotary positions, GPT-2 for\n"
         "                       learned ones; see docs/huggingface.md\n"
         "  --plan               do not train: project memory, traffic per group and step time\n"
         "                       (one process, any world size; see docs/planner.md)\n"
         "    --plan-ranks N         world size to plan for (default: the config's layout)\n"
         "    --plan-ranks-per-node K  ranks per node (default compression.ranks_per_node or 8)\n"
         "    --plan-link inter=RATE/LAT,intra=RATE/LAT  links (default inter=25gbit/5us,\n"
         "                           intra=400gbit/2us)\n"
         "    --plan-flops F         achieved FLOP/s per rank on one core (default: measured\n"
         "                           here on one layer of the model)\n"
         "    --plan-cores N         cores all ranks share, e.g. one machine running an\n"
         "                           emulated cluster (default: a core per rank)\n"
         "    --plan-waits spin|block  with --plan-cores: waiting ranks poll and stay\n"
         "                           runnable (spin, default) or sleep (block)\n"
         "    --plan-codec-scale X   codec throughput per rank in cores of this machine\n"
         "                           (default 1, or cores / ranks with --plan-cores)\n"
         "    --plan-link-efficiency E  goodput / link rate (default 0.85)\n"
         "    --compare-presets      plan every compression preset and name the fastest\n"
         "    --plan-json FILE       also write the plan as JSON\n"
         "    --plan-device D        the ranks' device: v100, a100-40gb, a100-80gb, h100, h200,\n"
         "                           cpu (default: measured here), or a YAML profile file\n"
         "    --plan-cluster C       nodes and links: selene, neox-20b, dgx-h100,\n"
         "                           pcie-ethernet, emulated, or a YAML profile file\n"
         "                           (--plan-link, --plan-ranks-per-node win over it)\n"
         "    --plan-attention A     with a GPU device: flash or materialized (default: flash\n"
         "                           where the device has the kernel)\n"
         "    --plan-stack S         with a GPU device, the training code its kernels come\n"
         "                           from: megatron (default), gpt-neox, megatron-deepspeed\n"
         "                           (each a fitted share of the device's kernel throughput)\n"
         "  --version            print the version, the git revision and the LibTorch, MPI and\n"
         "                       CUDA versions it was built with, and exit (no MPI job needed)\n"
         "  --help, -h           print this and exit\n"
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
    const std::string flag = arg.rfind("--config=", 0) == 0 ? "--config" : arg;
    // An option missing from flags() would be missing from usage() too.
    if (std::find(flags().begin(), flags().end(), flag) == flags().end())
      throw UsageError("unknown argument '" + arg + "'");
    if (arg == "--help" || arg == "-h") {
      args.help = true;
    } else if (arg == "--version") {
      args.version = true;
    } else if (arg == "--config") {
      args.config_paths.push_back(value_of(i, arg));
    } else if (arg.rfind("--config=", 0) == 0) {
      args.config_paths.push_back(arg.substr(9));
    } else if (arg == "--set") {
      std::string kv = value_of(i, arg);
      if (kv.find('=') == std::string::npos || kv.front() == '=')
        throw UsageError("--set expects key.path=value, got '" + kv + "'");
      args.overrides.push_back(kv);
    } else if (arg == "--print-config") {
      args.print_config = true;
    } else if (arg == "--plan") {
      args.plan.enabled = true;
    } else if (arg == "--plan-ranks") {
      args.plan.ranks = parse_positive(value_of(i, arg), arg);
    } else if (arg == "--plan-ranks-per-node") {
      args.plan.ranks_per_node = parse_positive(value_of(i, arg), arg);
    } else if (arg == "--plan-link") {
      parse_links(value_of(i, arg), args.plan);
      args.plan.links_given = true;
    } else if (arg == "--plan-flops") {
      args.plan.flops = parse_positive_real(value_of(i, arg), arg);
    } else if (arg == "--plan-cores") {
      args.plan.cores = parse_positive_real(value_of(i, arg), arg);
    } else if (arg == "--plan-waits") {
      args.plan.waits = value_of(i, arg);
      if (args.plan.waits != "spin" && args.plan.waits != "block")
        throw UsageError("--plan-waits is spin or block, got '" + args.plan.waits + "'");
    } else if (arg == "--plan-codec-scale") {
      args.plan.codec_scale = parse_positive_real(value_of(i, arg), arg);
    } else if (arg == "--plan-link-efficiency") {
      args.plan.link_efficiency = parse_positive_real(value_of(i, arg), arg);
      args.plan.link_efficiency_given = true;
      if (args.plan.link_efficiency > 1)
        throw UsageError("--plan-link-efficiency is goodput / link rate, at most 1, got " +
                         std::to_string(args.plan.link_efficiency));
    } else if (arg == "--compare-presets") {
      args.plan.compare_presets = true;
    } else if (arg == "--plan-json") {
      args.plan.json_path = value_of(i, arg);
    } else if (arg == "--plan-device") {
      args.plan.device = value_of(i, arg);
    } else if (arg == "--plan-cluster") {
      args.plan.cluster = value_of(i, arg);
    } else if (arg == "--plan-attention") {
      args.plan.attention = value_of(i, arg);
      if (args.plan.attention != "flash" && args.plan.attention != "materialized")
        throw UsageError("--plan-attention is flash or materialized, got '" + args.plan.attention +
                         "'");
    } else if (arg == "--plan-stack") {
      args.plan.stack = value_of(i, arg);
    } else if (arg == "--resume") {
      args.resume = true;
      if (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0)
        args.resume_path = argv[++i];
      // "auto" is the keyword; a directory of that name is "./auto".
      args.resume_auto = args.resume_path == "auto";
      if (args.resume_auto) args.resume_path.clear();
    } else if (arg == "--export") {
      args.export_path = value_of(i, arg);
    } else if (arg == "--export-hf") {
      args.export_hf_dir = value_of(i, arg);
    } else if (arg == "--dump-tensors") {
      args.dump_tensors_dir = value_of(i, arg);
    } else {
      throw UsageError("unknown argument '" + arg + "'");
    }
  }
  if (!args.help && !args.version && args.config_paths.empty())
    throw UsageError("--config FILE is required");
  const bool plan_options = args.plan.ranks || args.plan.ranks_per_node || args.plan.flops ||
                            args.plan.cores > 0 || args.plan.codec_scale > 0 ||
                            args.plan.compare_presets || !args.plan.json_path.empty();
  for (const auto& [flag, value] :
       {std::pair<const char*, const std::string*>{"--export", &args.export_path},
        {"--export-hf", &args.export_hf_dir}}) {
    if (value->empty()) continue;
    if (!args.resume)
      throw UsageError(std::string(flag) + " needs --resume [PATH] (the checkpoint to export)");
    if (args.resume_auto)
      throw UsageError(std::string(flag) +
                       " needs a checkpoint: --resume [PATH], not --resume auto");
  }
  if (plan_options && !args.plan.enabled)
    throw UsageError("--plan-* options and --compare-presets need --plan");
  return args;
}

}  // namespace cmpi::trainer
