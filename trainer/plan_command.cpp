#include "trainer/plan_command.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "config/config_loader.h"
#include "io/atomic_file.h"
#include "plan/plan_hardware.h"
#include "plan/plan_report.h"
#include "plan/step_plan.h"
#include "trainer/compute_probe.h"

namespace cmpi::trainer {

int plan_world_size(const PlanArgs& plan, const config::Config& c) {
  if (plan.ranks > 0) return int(plan.ranks);
  if (c.parallel.data > 0)
    return int(c.parallel.data * c.parallel.tensor * c.parallel.pipeline * c.parallel.spatial *
               c.parallel.context);
  throw UsageError("--plan: " + config::origin_of(c, "parallel.data") +
                   ": parallel.data is auto, so the world size is unknown: give --plan-ranks N");
}

int run_plan(const PlanArgs& args, const config::Config& config,
             const parallel::ParallelDims& dims) {
  plan::PlanOptions options;
  options.world_size = dims.world_size();
  options.ranks_per_node =
      int(args.ranks_per_node > 0                 ? args.ranks_per_node
          : config.compression.ranks_per_node > 0 ? config.compression.ranks_per_node
                                                  : 8);
  options.inter = plan::Link::parse(args.inter_link, "--plan-link inter");
  options.intra = plan::Link::parse(args.intra_link, "--plan-link intra");
  options.link_efficiency = args.link_efficiency;
  try {
    // A cluster profile sets the node size and links; the flags given win.
    if (!args.cluster.empty()) {
      plan::use_cluster(options, plan::load_cluster_profile(args.cluster));
      if (args.ranks_per_node > 0) options.ranks_per_node = int(args.ranks_per_node);
      if (args.links_given) {
        options.inter = plan::Link::parse(args.inter_link, "--plan-link inter");
        options.intra = plan::Link::parse(args.intra_link, "--plan-link intra");
      }
      if (args.link_efficiency_given) {
        options.link_efficiency = args.link_efficiency;
        options.intra_link_efficiency = 0;
      }
    }
    if (!args.device.empty()) {
      plan::use_device(options, plan::load_device_profile(args.device), args.attention);
      if (options.on_device()) options.device->peak_for(config.training.precision);
    }
    if (!args.stack.empty()) plan::use_stack(options, plan::load_software_stack(args.stack));
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  if (options.on_device() && args.flops > 0)
    throw UsageError("--plan-flops and --plan-device " + args.device +
                     " both say how fast a rank computes: give one");
  if (!options.on_device() && !args.attention.empty())
    throw UsageError("--plan-attention needs a GPU --plan-device (the CPU's rate is measured)");
  if (!options.on_device() && !args.stack.empty())
    throw UsageError("--plan-stack needs a GPU --plan-device (the CPU's rate is measured)");
  options.cores = args.cores;
  options.spinning_waits = args.waits == "spin";
  // A rank's codecs run on its share of the cores unless the user says how
  // fast they are (GPU codecs).
  options.codec_scale = args.codec_scale > 0 ? args.codec_scale
                        : args.cores > 0 ? std::min(1.0, args.cores / double(options.world_size))
                                         : 1.0;
  if (options.on_device()) {
    // The device's kernel model (plan/device_compute.h) sets the compute.
  } else if (args.flops > 0) {
    options.flops_per_second = args.flops;
  } else {
    const ComputeProbe probe = probe_compute(config);
    options.flops_per_second = probe.flops_per_second;
    std::printf("compute: measured here, %.3g GFLOP/s on one layer of the model (%s%s)\n",
                probe.flops_per_second / 1e9, probe.shape.c_str(),
                probe.shrunk ? ", shrunk from the config's shape to time it" : "");
  }
  plan::CodecCostTable codecs(options.codec_scale, options.on_device()
                                                       ? options.device->codecs
                                                       : std::vector<plan::DeviceCodecSpeed>{});
  const plan::StepPlan mine = plan::plan_step(config, dims, options, codecs);
  std::fputs(plan::plan_table(mine, options, config.source).c_str(), stdout);
  std::string json = plan::plan_json(mine, options);
  if (args.compare_presets) {
    std::vector<plan::StepPlan> plans;
    for (const char* preset : {"none", "mzhybrid", "zhybrid", "auto"}) {
      config::Config variant = config;
      variant.compression.preset = preset;
      plans.push_back(plan::plan_step(variant, dims, options, codecs));
    }
    std::printf("\npresets (%s links between nodes):\n%s", options.inter.to_string().c_str(),
                plan::presets_table(plans).c_str());
    json = "{\"plan\":" + json + ",\"compare\":" + plan::presets_json(plans) + "}";
  }
  std::fflush(stdout);
  if (!args.json_path.empty()) io::write_file_atomically(args.json_path, json + "\n");
  return 0;
}

}  // namespace cmpi::trainer
