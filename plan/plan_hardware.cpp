#include "plan/plan_hardware.h"

#include <cstdio>
#include <stdexcept>

namespace cmpi::plan {

void use_device(PlanOptions& o, const DeviceProfile& device, const std::string& attention) {
  o.device = device;
  if (attention == "flash" && !device.flash_attention)
    throw std::invalid_argument("--plan-attention flash: device " + device.name +
                                " has no flash attention kernel in its profile");
  o.flash_attention = attention.empty() ? device.flash_attention : attention == "flash";
}

void use_stack(PlanOptions& o, const SoftwareStack& stack) {
  o.stack = stack;
}

void use_cluster(PlanOptions& o, const ClusterProfile& cluster) {
  o.ranks_per_node = cluster.devices_per_node;
  o.intra = cluster.intra;
  o.inter = cluster.inter;
  o.intra_link_efficiency = cluster.intra_efficiency;
  o.link_efficiency = cluster.inter_efficiency;
}

std::string describe_device(const PlanOptions& o, config::Precision precision) {
  if (!o.on_device()) return "";
  const DeviceProfile& d = *o.device;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%s: %s %.4g TFLOP/s peak, %.3g GB at %.3g TB/s, attention %s (%s)", d.name.c_str(),
                config::name_of(precision), d.peak_for(precision) / 1e12, d.memory_bytes / 1e9,
                d.memory_bytes_per_s / 1e12, o.flash_attention ? "flash" : "materialized",
                d.source.c_str());
  std::string text = buf;
  if (!o.stack.is_reference()) {
    std::snprintf(buf, sizeof buf, ", stack %s: x %.2f of the kernels' throughput (%s)",
                  o.stack.name.c_str(), o.stack.kernel_efficiency, o.stack.description.c_str());
    text += buf;
  }
  return text;
}

}  // namespace cmpi::plan
