#include "plan/cluster_profile.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <stdexcept>

#include <yaml-cpp/yaml.h>

#include "config/units.h"
#include "config/yaml_reader.h"

namespace cmpi::plan {
namespace {

// Rates are NVIDIA's and the InfiniBand generations' nominal ones, per
// direction; the efficiencies are assumptions (docs/planner.md): NVLink
// through NVSwitch at 0.8 of its rate as a ring's bus bandwidth, InfiniBand
// at 0.9 (GPUDirect RDMA), Ethernet and PCIe at 0.85 (this project's
// measured TCP goodput, docs/planner.md "Cost").
std::vector<ClusterProfile> builtin_profiles() {
  return {
      // NVIDIA Selene (Megatron-LM, SC'21): DGX A100 nodes, 8 GPUs on NVLink 3
      // through NVSwitch (300 GB/s per GPU and direction), 8 HDR InfiniBand
      // adapters of 200 Gbit/s per node (one per GPU).
      {"selene",
       "NVLink 3 + NVSwitch, 8 x HDR InfiniBand per node",
       8,
       {2400e9, 2e-6},
       {1600e9, 5e-6},
       0.8,
       0.9},
      // GPT-NeoX-20B (Black et al. 2022, section 3): 8 A100-SXM4-40GB per
      // node on NVLink 3 / NVSwitch, four ConnectX-6 HDR adapters per node.
      {"neox-20b",
       "NVLink 3 + NVSwitch, 4 x HDR InfiniBand per node",
       8,
       {2400e9, 2e-6},
       {800e9, 5e-6},
       0.8,
       0.9},
      // DGX H100: NVLink 4 (450 GB/s per GPU and direction), 8 NDR adapters
      // of 400 Gbit/s.
      {"dgx-h100",
       "NVLink 4 + NVSwitch, 8 x NDR InfiniBand per node",
       8,
       {3600e9, 2e-6},
       {3200e9, 5e-6},
       0.8,
       0.9},
      // 8 GPUs on PCIe 4.0 x16 (~25 GB/s per direction), 2 x 100 GbE.
      {"pcie-ethernet",
       "PCIe 4.0 x16, 2 x 100 GbE per node",
       8,
       {200e9, 5e-6},
       {200e9, 10e-6},
       0.85,
       0.85},
      // --plan's defaults: the emulated CPU cluster.
      {"emulated", "the --plan defaults", 8, {400e9, 2e-6}, {25e9, 5e-6}, 0.85, 0.85},
  };
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char ch) { return char(std::tolower(ch)); });
  return text;
}

Link read_link(config::MapReader& r, const std::string& key) {
  std::string text;
  r.read(key, text);
  try {
    return Link::parse(text, key);
  } catch (const std::invalid_argument& e) {
    r.fail(key, e.what());
  }
}

double read_efficiency(config::MapReader& r, const std::string& key, double fallback) {
  double value = fallback;
  r.read(key, value, {0, 1, true, false});
  return value;
}

ClusterProfile read_profile_file(const std::string& file) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(file);
  } catch (const YAML::Exception& e) {
    throw std::invalid_argument("--plan-cluster " + file + ": not a YAML file: " + e.what());
  }
  config::ReadContext context(file);
  config::MapReader r(root, "", context);
  ClusterProfile p;
  r.read("name", p.name);
  p.fabric = file;
  int64_t devices = p.devices_per_node;
  r.read("devices_per_node", devices, config::positive());
  p.devices_per_node = int(devices);
  if (!r.has("intra") || !r.has("inter"))
    r.fail(r.has("intra") ? "inter" : "intra",
           "required: RATE/LATENCY like 2400gbit/2us (intra: one device's port; inter: a "
           "node's uplink, all rails)");
  p.intra = read_link(r, "intra");
  p.inter = read_link(r, "inter");
  p.intra_efficiency = read_efficiency(r, "intra_efficiency", p.intra_efficiency);
  p.inter_efficiency = read_efficiency(r, "inter_efficiency", p.inter_efficiency);
  r.finish();
  return p;
}

}  // namespace

std::vector<std::string> builtin_cluster_names() {
  std::vector<std::string> names;
  for (const ClusterProfile& p : builtin_profiles()) names.push_back(p.name);
  return names;
}

ClusterProfile load_cluster_profile(const std::string& name_or_file) {
  const std::string name = lower(name_or_file);
  for (const ClusterProfile& p : builtin_profiles())
    if (p.name == name) return p;
  if (std::ifstream(name_or_file).good()) {
    try {
      return read_profile_file(name_or_file);
    } catch (const config::ConfigError& e) {
      throw std::invalid_argument(std::string("--plan-cluster: ") + e.what());
    }
  }
  throw std::invalid_argument(
      "--plan-cluster: " +
      config::unknown_word_message("cluster", name_or_file, builtin_cluster_names()) +
      ", or a YAML file describing one (docs/planner.md)");
}

}  // namespace cmpi::plan
