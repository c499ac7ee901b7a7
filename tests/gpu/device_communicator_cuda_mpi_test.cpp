// Device-tagged Communicator calls on a real GPU (CudaDevice; ranks may share
// one GPU): every collective equals the host-buffer call bit for bit with no
// rule (plain staging), mpc and zfp rate 16, and a device codec ran where the
// rule names one. The same comparison as the FakeDevice test
// (tests/comm/device_communicator_mpi_test.cpp), here through the CUDA
// kernels, streams and pinned copies. Skips with the reason on every rank
// when the CUDA runtime sees no GPU.
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>

#include "compress/cuda/cuda_device.h"
#include "tests/comm/device_communicator_test_support.h"

namespace cmpi::comm {
namespace {

using device_testing::compare_every_collective;
using device_testing::DeviceSide;
using device_testing::make_comm;
using device_testing::policy_for;

TEST(DeviceCommunicatorCudaMpi, DeviceCallsOnTheGpuEqualTheHostCalls) {
  if (compress::cuda::cuda_device_count() == 0)
    GTEST_SKIP() << compress::cuda::cuda_unavailable_reason();
  struct Case {
    const char* codec;
    size_t n;
    bool compresses;
  };
  // Raw: large enough for the host's plain ring on 3+ ranks (see the
  // FakeDevice test); 64 Ki-float chunks, several per call.
  for (const Case& c : {Case{"", (size_t(1) << 20) + 37, false}, Case{"mpc", 500003, true},
                        Case{"zfp:rate=16", 500003, true}}) {
    SCOPED_TRACE(std::string("rule '") + c.codec + "', seed " +
                 std::to_string(cmpi::testing::test_seed()));
    const Policy policy = policy_for(c.codec, 4 << 16);
    DeviceSide side(compress::cuda::make_cuda_device(0));
    auto host = make_comm(policy, GroupKind::kDp);
    auto device = make_comm(policy, GroupKind::kDp);
    device->attach_device(side.device, side.stream);
    compare_every_collective(*host, *device, side, c.n);
    EXPECT_EQ(device->stats().at(Op::kAllgather).compressed_calls, c.compresses ? 1u : 0u);
    EXPECT_EQ(device->stats().at(Op::kAllreduce).raw_bytes,
              host->stats().at(Op::kAllreduce).raw_bytes);
  }
}

}  // namespace
}  // namespace cmpi::comm
