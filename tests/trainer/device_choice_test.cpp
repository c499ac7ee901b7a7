// run.device: which device each rank takes, the one-line refusal of cuda
// where none is visible, and the layouts a device run is refused.
#include <gtest/gtest.h>

#include "trainer/device_choice.h"

namespace cmpi::trainer {
namespace {

DeviceContext node(int local_rank, int local_size, int visible_cuda) {
  DeviceContext context;
  context.world_rank = 8 + local_rank;
  context.host = "gpu-node-3";
  context.local_rank = local_rank;
  context.local_size = local_size;
  context.visible_cuda = visible_cuda;
  context.visible_list = "(unset)";
  return context;
}

// The place on the node comes from the agreed grouping: ranks 0, 2, 3 on
// node 0 and 1, 4 on node 1 are local ranks 0, 1, 2 and 0, 1.
TEST(DeviceChoice, RankOnTheNodeFollowsTheAgreedGroupingInWorldRankOrder) {
  comm::NodeGrouping nodes;
  nodes.node_of_rank = {0, 1, 0, 0, 1};
  const int local[] = {0, 0, 1, 2, 1}, size[] = {3, 2, 3, 3, 2};
  for (int r = 0; r < 5; ++r) {
    EXPECT_EQ(node_place(nodes, r).local_rank, local[r]) << "world rank " << r;
    EXPECT_EQ(node_place(nodes, r).local_size, size[r]) << "world rank " << r;
  }
  EXPECT_THROW(node_place(nodes, 5), std::logic_error);
}

TEST(DeviceChoice, CpuIsTheCpuWhateverIsVisible) {
  EXPECT_TRUE(choose_device(config::RunDevice::kCpu, node(0, 1, 0)).is_cpu());
  EXPECT_TRUE(choose_device(config::RunDevice::kCpu, node(1, 4, 4)).is_cpu());
}

TEST(DeviceChoice, AutoTakesCudaOnlyWhereADeviceIsVisible) {
  EXPECT_TRUE(choose_device(config::RunDevice::kAuto, node(0, 2, 0)).is_cpu());
  const auto device = choose_device(config::RunDevice::kAuto, node(1, 2, 2));
  EXPECT_TRUE(device.is_cuda());
  EXPECT_EQ(device.index(), 1);
}

TEST(DeviceChoice, EachRankTakesTheGpuOfItsRankOnTheNodeModuloTheVisibleOnes) {
  // 4 ranks on a node with 4 GPUs: one each.
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(choose_device(config::RunDevice::kCuda, node(r, 4, 4)).index(), r);
  // 4 ranks sharing 2 GPUs: 0,1,0,1; a launcher that shows each rank one GPU: all 0.
  EXPECT_EQ(choose_device(config::RunDevice::kCuda, node(2, 4, 2)).index(), 0);
  EXPECT_EQ(choose_device(config::RunDevice::kCuda, node(3, 4, 2)).index(), 1);
  EXPECT_EQ(choose_device(config::RunDevice::kCuda, node(3, 4, 1)).index(), 0);
}

TEST(DeviceChoice, CudaWithoutAVisibleDeviceIsOneErrorNamingRankHostAndKey) {
  try {
    choose_device(config::RunDevice::kCuda, node(1, 2, 0));
    FAIL() << "run.device: cuda without a device was accepted";
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("rank 9 on host gpu-node-3"), std::string::npos) << message;
    EXPECT_NE(message.find("run.device is cuda"), std::string::npos) << message;
    EXPECT_NE(message.find("CUDA_VISIBLE_DEVICES=(unset)"), std::string::npos) << message;
  }
}

TEST(DeviceChoice, RanksSharingAGpuAreCountedPerDevice) {
  // 5 ranks on 2 GPUs: GPU 0 takes local ranks 0, 2, 4; GPU 1 takes 1, 3.
  EXPECT_EQ(ranks_sharing(torch::Device(torch::kCUDA, 0), node(0, 5, 2)), 3);
  EXPECT_EQ(ranks_sharing(torch::Device(torch::kCUDA, 1), node(1, 5, 2)), 2);
  EXPECT_EQ(ranks_sharing(torch::Device(torch::kCPU), node(1, 5, 2)), 1);
  const std::string line = describe_device(torch::Device(torch::kCUDA, 0), node(0, 5, 2));
  EXPECT_NE(line.find("cuda:0"), std::string::npos) << line;
  EXPECT_NE(line.find("shared by 3 ranks"), std::string::npos) << line;
  EXPECT_EQ(describe_device(torch::Device(torch::kCPU), node(0, 1, 0)), "device: cpu");
}

TEST(DeviceChoice, LayoutsWithoutADevicePathAreRefusedNamingTheirKey) {
  config::Config config;
  EXPECT_EQ(device_layout_refusal(config), "");
  config.parallel.data = 2;  // data, tensor and pipeline parallelism: built
  config.parallel.tensor = 2;
  config.parallel.pipeline = 2;
  EXPECT_EQ(device_layout_refusal(config), "");
  config.parallel.context = 2;
  EXPECT_EQ(device_layout_refusal(config), "") << "context parallelism is built";
  config.parallel.context = 1;
  config.parallel.spatial = 2;
  EXPECT_NE(device_layout_refusal(config).find("parallel.spatial is 2"), std::string::npos);
  config.parallel.spatial = 1;
  config.parallel.zero_stage = 2;
  EXPECT_EQ(device_layout_refusal(config), "") << "ZeRO-1 and -2 are built";
  config.parallel.zero_gradient_memory = "shard";
  EXPECT_NE(device_layout_refusal(config).find("zero_gradient_memory"), std::string::npos);
  config.parallel.zero_gradient_memory = "full_buffer";
  config.parallel.zero_stage = 3;
  EXPECT_NE(device_layout_refusal(config).find("parallel.zero_stage 0 to 2 so far, not 3"),
            std::string::npos);
  config.parallel.zero_stage = 0;
  config.parallel.dp_sync = "diloco";
  EXPECT_EQ(device_layout_refusal(config), "") << "DiLoCo is built";
  config.parallel.dp_sync = "every_step";
  config.model.kind = config::ModelFamily::kResnet;
  EXPECT_NE(device_layout_refusal(config).find("model.kind is resnet"), std::string::npos);
}

}  // namespace
}  // namespace cmpi::trainer
