// Communicator calls on device buffers (MemoryKind::kDevice), each rank with
// its own FakeDevice: through the same policy, a device-tagged call equals
// the host-buffer call bit for bit, with no rule (the plain staged path),
// with mpc (lossless, the device mpc codec) and with zfp rate 16 (the device
// zfp codec, whose payloads are the CPU codec's); CommStats counts the device
// calls as it counts the host ones (calls, raw bytes, compressed calls) and
// the wire bytes the device transport sent; a route whose codec has no
// device implementation takes the plain staged path; a device call on a
// communicator without a device is refused, naming the group and operation.
#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "compress/cuda/fake_device.h"
#include "tests/comm/device_communicator_test_support.h"
#include "tests/support/mpi_world.h"

namespace cmpi::comm {
namespace {

using compress::cuda::DeviceBuffer;
using compress::cuda::FakeDevice;
using device_testing::compare_every_collective;
using device_testing::data_of;
using device_testing::DeviceSide;
using device_testing::expect_same_bits;
using device_testing::group_sum;
using device_testing::make_comm;
using device_testing::policy_for;
using testing::world_rank;
using testing::world_size;

constexpr Op kCollectives[] = {Op::kAllreduce, Op::kReduceScatter, Op::kAllgather, Op::kBroadcast,
                               Op::kAlltoall};

struct RouteCase {
  const char* codec;       // the device communicator's rule ("": none)
  bool feedback;           // ... with error feedback
  const char* host_codec;  // the rule of the host call it must equal
  size_t n;
  bool compresses;  // a device codec runs
};

// Raw sums: large enough that the host allreduce on 3+ ranks takes the
// plain ring (plain_ring_min_bytes, 1 MiB), whose summation order the
// device ring shares (MPI_Allreduce's may differ); on 2 ranks each sum is
// one addition. A codec without a device implementation (topk) and a rule
// with error feedback take the plain staged path: the raw host call's bits.
constexpr size_t kRingSized = (size_t(1) << 18) + 37;
const RouteCase kRouteCases[] = {{"", false, "", kRingSized, false},
                                 {"mpc", false, "mpc", 6007, true},
                                 {"zfp:rate=16", false, "zfp:rate=16", 6007, true},
                                 {"topk:ratio=0.1", false, "", kRingSized, false},
                                 {"zfp:rate=16", true, "", kRingSized, false}};

TEST(DeviceCommunicatorMpi, DeviceCallsEqualTheHostCallsAndAreCounted) {
  const int me = world_rank();
  for (const RouteCase& c : kRouteCases) {
    SCOPED_TRACE(std::string("rule '") + c.codec + (c.feedback ? "' with feedback" : "'") +
                 ", rank " + std::to_string(me) + ", seed " +
                 std::to_string(cmpi::testing::test_seed()));
    // 500-float chunks: a call spans many chunks and every stream slot is reused.
    const Policy host_policy = policy_for(c.host_codec, 4 * 500);
    const Policy device_policy = policy_for(c.codec, 4 * 500, c.feedback);
    // The device outlives the communicator it is attached to.
    DeviceSide side(std::make_unique<FakeDevice>(cmpi::testing::test_seed() + uint64_t(me)));
    auto host = make_comm(host_policy, GroupKind::kDp);
    auto device = make_comm(device_policy, GroupKind::kDp);
    device->attach_device(side.device, side.stream);
    compare_every_collective(*host, *device, side, c.n);

    for (Op op : kCollectives) {
      SCOPED_TRACE("op " + std::to_string(int(op)));
      const OpCounters& h = host->stats().at(op);
      const OpCounters& d = device->stats().at(op);
      EXPECT_EQ(d.calls, 1u);
      EXPECT_EQ(d.raw_bytes, h.raw_bytes);
      EXPECT_EQ(d.compressed_calls, c.compresses ? 1u : 0u);
      EXPECT_EQ(d.intra_wire_bytes + d.inter_wire_bytes, d.wire_bytes);
      EXPECT_GT(d.seconds, 0.0);
      if (c.compresses) {
        // Smooth data: both codecs shrink it.
        EXPECT_LT(group_sum(d.wire_bytes), group_sum(d.raw_bytes));
      } else {
        // Plain staging sends every raw byte once, if not always from the
        // rank the ring would (the device all-gather is direct).
        EXPECT_EQ(group_sum(d.wire_bytes), group_sum(d.raw_bytes));
      }
    }
  }
}

TEST(DeviceCommunicatorMpi, DeviceSendReachesADeviceRecv) {
  const int me = world_rank(), p = world_size();
  for (const char* codec : {"", "mpc", "zfp:rate=16"}) {
    SCOPED_TRACE(std::string("rule '") + codec + "', rank " + std::to_string(me));
    const Policy policy = policy_for(codec, 4 * 300);
    DeviceSide side(std::make_unique<FakeDevice>(cmpi::testing::test_seed() + 17 * uint64_t(me)));
    auto host = make_comm(policy, GroupKind::kPp);
    auto device = make_comm(policy, GroupKind::kPp);
    device->attach_device(side.device, side.stream);
    const size_t n = 2003;
    // Even ranks send to the next rank, which receives: pairs never wait on
    // each other in a cycle.
    const bool sender = me % 2 == 0 && me + 1 < p, receiver = me % 2 == 1;
    if (sender) {
      const auto x = data_of(me, n, 6);
      DeviceBuffer d = side.upload(x);
      host->send(MemoryKind::kHost, x.data(), n, me + 1, 5, Role::kActivation);
      device->send(MemoryKind::kDevice, d.as<const float>(), n, me + 1, 5, Role::kActivation);
      EXPECT_EQ(device->stats().at(Op::kSendRecv).calls, 1u);
      EXPECT_EQ(device->stats().at(Op::kSendRecv).raw_bytes, 4u * n);
    }
    if (receiver) {
      std::vector<float> want(n);
      DeviceBuffer d = side.zeros(n);
      host->recv(MemoryKind::kHost, want.data(), n, me - 1, 5, Role::kActivation);
      device->recv(MemoryKind::kDevice, d.as<float>(), n, me - 1, 5, Role::kActivation);
      expect_same_bits(side.download(d, n), want, "recv");
      EXPECT_EQ(device->stats().at(Op::kSendRecv).calls, 0u);  // the sender counts it
    }
  }
}

TEST(DeviceCommunicatorMpi, DeviceCallWithoutADeviceIsRefused) {
  const Policy policy = policy_for("mpc", 4 * 500);
  auto comm = make_comm(policy, GroupKind::kTp);
  std::vector<float> data(64, 1.0f);
  try {
    comm->allreduce(MemoryKind::kDevice, data.data(), data.size(), Role::kGradient);
    ADD_FAILURE() << "a device allreduce without a device was accepted";
  } catch (const std::logic_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("group tp"), std::string::npos) << what;
    EXPECT_NE(what.find("device allreduce"), std::string::npos) << what;
    EXPECT_NE(what.find("attach_device"), std::string::npos) << what;
  }
  EXPECT_FALSE(comm->has_device());
  EXPECT_EQ(comm->stats().total().calls, 0u);
}

}  // namespace
}  // namespace cmpi::comm
