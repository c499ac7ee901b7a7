#include "trainer/device_choice.h"

#include <cstdlib>
#include <stdexcept>

namespace cmpi::trainer {
namespace {

std::string rank_on_host(const DeviceContext& context) {
  return "rank " + std::to_string(context.world_rank) + " on host " + context.host;
}

}  // namespace

torch::Device choose_device(config::RunDevice wanted, const DeviceContext& context) {
  if (wanted == config::RunDevice::kCpu) return torch::Device(torch::kCPU);
  if (context.visible_cuda <= 0) {
    if (wanted == config::RunDevice::kAuto) return torch::Device(torch::kCPU);
    throw std::runtime_error(rank_on_host(context) +
                             ": run.device is cuda, but no CUDA device is visible to it "
                             "(LibTorch sees 0; CUDA_VISIBLE_DEVICES=" +
                             context.visible_list + "); set run.device: cpu or auto");
  }
  if (context.local_rank < 0 || context.local_size <= 0 || context.local_rank >= context.local_size)
    throw std::logic_error(rank_on_host(context) + ": rank " + std::to_string(context.local_rank) +
                           " of " + std::to_string(context.local_size) + " on its node");
  return torch::Device(torch::kCUDA, int8_t(context.local_rank % context.visible_cuda));
}

int ranks_sharing(const torch::Device& device, const DeviceContext& context) {
  if (!device.is_cuda() || context.visible_cuda <= 0) return 1;
  // Local ranks r with r mod visible == index.
  const int index = device.index(), visible = context.visible_cuda;
  return context.local_size / visible + (index < context.local_size % visible ? 1 : 0);
}

NodePlace node_place(const comm::NodeGrouping& nodes, int world_rank) {
  const auto& node_of = nodes.node_of_rank;
  if (world_rank < 0 || size_t(world_rank) >= node_of.size())
    throw std::logic_error("node_place: rank " + std::to_string(world_rank) + " of " +
                           std::to_string(node_of.size()));
  NodePlace place{0, 0};
  for (size_t r = 0; r < node_of.size(); ++r) {
    if (node_of[r] != node_of[size_t(world_rank)]) continue;
    if (r < size_t(world_rank)) ++place.local_rank;
    ++place.local_size;
  }
  return place;
}

DeviceContext probe_device_context(const comm::NodeGrouping& nodes, int world_rank,
                                   bool count_cuda) {
  DeviceContext context;
  context.world_rank = world_rank;
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  context.host.assign(name, size_t(length));
  const NodePlace place = node_place(nodes, world_rank);
  context.local_rank = place.local_rank;
  context.local_size = place.local_size;
  context.visible_cuda = count_cuda ? int(torch::cuda::device_count()) : 0;
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  context.visible_list = visible ? std::string("'") + visible + "'" : "(unset)";
  return context;
}

std::string device_layout_refusal(const config::Config& config) {
  const std::string head = "run.device: training on a CUDA device is built for the GPT ";
  if (config.model.kind != config::ModelFamily::kGpt)
    return head + "only; model.kind is " + config::name_of(config.model.kind) +
           " (set run.device: cpu)";
  const auto& p = config.parallel;
  if (p.spatial > 1)
    return head + "without spatial parallelism (the ResNet's): parallel.spatial is " +
           std::to_string(p.spatial);
  if (p.zero_stage > 2)
    return head + "at parallel.zero_stage 0 to 2 so far, not " + std::to_string(p.zero_stage) +
           " (set parallel.zero_stage: 2)";
  if (p.zero_stage == 2 && p.zero_gradient_memory == "shard")
    return head + "with parallel.zero_gradient_memory full_buffer so far, not shard";
  return "";
}

std::string describe_device(const torch::Device& device, const DeviceContext& context) {
  if (!device.is_cuda()) return "device: cpu";
  const int sharing = ranks_sharing(device, context);
  return "device: " + device.str() + " (" + std::to_string(context.visible_cuda) +
         " visible to rank " + std::to_string(context.world_rank) + ")" +
         (sharing > 1 ? ", shared by " + std::to_string(sharing) + " ranks of the node" : "");
}

}  // namespace cmpi::trainer
