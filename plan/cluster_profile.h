// The cluster a plan's ranks run on (`--plan-cluster`): how many devices a
// node holds, the fabric inside a node and the links between nodes, each
// with its per-message latency and the share of its rate a collective
// achieves.
//
// The links are given as the plan's cost model uses them (plan/cost_model.h):
// `intra` is one device's port into the node's fabric (NVLink through
// NVSwitch: every device its own full rate), `inter` a node's uplink, all its
// rails together (the ranks of one stage on a node share it). Bytes are
// counted per rank as the project's ring collectives send them (an allreduce
// 2(n-1)/n of the buffer), i.e. NCCL's "bus bandwidth" convention, so the
// efficiencies here are bus bandwidth over link rate.
//
// Built in: selene (DGX A100, Megatron-LM's runs), neox-20b (the GPT-NeoX-20B
// cluster), dgx-h100, pcie-ethernet (8 devices on PCIe, 2 x 100 GbE), and
// emulated (the defaults of --plan: this project's CPU cluster). Sources and
// what is assumed: docs/planner.md, "Device and cluster profiles".
#pragma once

#include <string>
#include <vector>

#include "plan/cost_model.h"

namespace cmpi::plan {

struct ClusterProfile {
  std::string name;
  std::string fabric;  // for the plan's line: "NVLink 3 + NVSwitch, 8 x HDR IB"
  int devices_per_node = 8;
  Link intra{400e9, 2e-6};
  Link inter{25e9, 5e-6};
  double intra_efficiency = 0.85;
  double inter_efficiency = 0.85;
};

std::vector<std::string> builtin_cluster_names();

// A built-in profile by name (case-insensitive) or a YAML file's; throws
// std::invalid_argument with one message naming the culprit (an unknown name
// lists the known ones; a file's error names its file, line and key).
ClusterProfile load_cluster_profile(const std::string& name_or_file);

}  // namespace cmpi::plan
