// Command line of cmpi-train (usage() lists every option; a test holds it
// to flags(), the list parse() accepts):
//   cmpi-train --config FILE.yaml [--config MORE.yaml ...] [--set key.path=value ...]
//              [--dump-tensors DIR] [--print-config] [--resume [PATH|auto]]
//   cmpi-train --version
//   cmpi-train --config FILE.yaml --resume [PATH] --export OUT.safetensors
//   cmpi-train --config FILE.yaml --resume [PATH] --export-hf DIR
//   cmpi-train --config FILE.yaml --plan [--plan-ranks N] [--plan-ranks-per-node K]
//              [--plan-link inter=RATE/LAT,intra=RATE/LAT] [--plan-flops F]
//              [--plan-codec-scale X] [--plan-link-efficiency E] [--compare-presets]
//              [--plan-json FILE] [--plan-device D] [--plan-cluster C]
//              [--plan-attention flash|materialized] [--plan-stack S]
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace cmpi::trainer {

class UsageError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// `--plan`: project the step instead of training (plan/step_plan.h).
struct PlanArgs {
  bool enabled = false;
  int64_t ranks = 0;           // 0: the config's layout product, or the MPI world
  int64_t ranks_per_node = 0;  // 0: compression.ranks_per_node, else 8
  std::string inter_link = "25gbit/5us", intra_link = "400gbit/2us";
  double flops = 0;  // per rank; 0: measured on this machine (compute_probe.h)
  // Codec throughput per rank as a multiple of one core of this machine
  // (far above 1 for GPU codecs); 0: one core, or the rank's share of the
  // cores with --plan-cores.
  double codec_scale = 0;
  // Cores all the ranks share (an emulated cluster on one machine); 0: each
  // rank has its own.
  double cores = 0;
  // With cores: whether a waiting rank keeps its core busy polling ("spin",
  // what OpenMPI's and the collectives' yield loops do) or sleeps ("block").
  std::string waits = "spin";
  double link_efficiency = 0.85;  // goodput / link rate
  // Whether --plan-link / --plan-link-efficiency / --plan-ranks-per-node
  // were given: they win over a cluster profile's.
  bool links_given = false, link_efficiency_given = false;
  // --plan-device: a built-in device (plan/device_profile.h) or a YAML file;
  // empty: cpu. --plan-cluster likewise (plan/cluster_profile.h); empty: the
  // links above. --plan-attention: flash or materialized; empty: flash where
  // the device has the kernel.
  std::string device, cluster, attention;
  // --plan-stack: the software stack whose kernels run on the device
  // (plan/software_stack.h); empty: megatron, the device table's own.
  std::string stack;
  bool compare_presets = false;
  std::string json_path;
};

struct CliArgs {
  // --config, in order: later files' keys win (config/config_layers.h).
  std::vector<std::string> config_paths;
  std::vector<std::string> overrides;  // "key.path=value"
  std::string dump_tensors_dir;
  bool help = false;
  bool version = false;       // print the version and the libraries built with, and exit
  bool print_config = false;  // print the resolved config and exit
  bool resume = false;        // --resume given
  std::string resume_path;    // its PATH; empty: the latest checkpoint of the run
  // --resume auto: the latest complete checkpoint of the run, or a fresh
  // start when there is none (what a restarted or requeued job passes).
  bool resume_auto = false;
  std::string export_path;  // --export: write the checkpoint as safetensors and exit
  // --export-hf: write the checkpoint as a Hugging Face model directory and exit
  std::string export_hf_dir;
  bool exports() const { return !export_path.empty() || !export_hf_dir.empty(); }
  PlanArgs plan;

  static CliArgs parse(int argc, char** argv);  // throws UsageError
  static const char* usage();
  // Every option parse() accepts ("--config", "-h", ...).
  static const std::vector<std::string>& flags();
};

}  // namespace cmpi::trainer
