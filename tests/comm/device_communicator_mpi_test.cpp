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

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/policy.h"
#include "compress/cuda/fake_device.h"
#include "tests/support/mpi_world.h"
#include "tests/support/test_seed.h"

namespace cmpi::comm {
namespace {

using compress::cuda::DeviceBuffer;
using compress::cuda::FakeDevice;
using compress::cuda::PinnedBuffer;
using compress::cuda::StreamId;
using testing::world_rank;
using testing::world_size;

// Smooth values plus noise (mpc and zfp compress them; sums round), which
// every rank can regenerate for any rank.
std::vector<float> data_of(int rank, size_t n, uint64_t salt) {
  std::mt19937_64 gen(cmpi::testing::test_seed() ^ (salt * 0x9e3779b97f4a7c15ull) ^
                      (uint64_t(rank + 1) << 40));
  std::normal_distribution<float> noise(0.0f, 0.01f);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = float(3.0 * std::sin(0.002 * double(i) + rank)) + noise(gen);
  return v;
}

// No rule (codec empty): every message raw; else one rule for everything.
Policy policy_for(const std::string& codec, int64_t chunk_bytes, bool feedback = false) {
  PolicyConfig config;
  config.chunk_bytes = chunk_bytes;
  if (!codec.empty()) {
    PolicyRule rule;
    rule.match.min_bytes = 0;
    rule.codec = compress::CodecSpec::parse(codec);
    rule.error_feedback = feedback;
    rule.origin = "device test rule";
    config.rules.push_back(rule);
  }
  return Policy(config);
}

std::unique_ptr<Communicator> make_comm(const Policy& policy, GroupKind kind) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  return std::make_unique<Communicator>(comm, kind, std::make_unique<PolicySlice>(policy, kind));
}

// A rank's fake device, its caller stream, and copies to and from it.
struct DeviceSide {
  explicit DeviceSide(uint64_t seed) : device(seed), stream(device.create_stream()) {}

  DeviceBuffer upload(const std::vector<float>& x) {
    DeviceBuffer buffer(device, 4 * x.size() + 4);
    PinnedBuffer host(device, 4 * x.size() + 4);
    std::memcpy(host.as(), x.data(), 4 * x.size());
    device.copy_to_device(buffer.as(), host.as(), 4 * x.size(), stream);
    device.synchronize_stream(stream);
    return buffer;
  }
  DeviceBuffer zeros(size_t n) { return upload(std::vector<float>(n, 0.0f)); }
  std::vector<float> download(const DeviceBuffer& buffer, size_t n) {
    PinnedBuffer host(device, 4 * n + 4);
    device.copy_to_host(host.as(), buffer.as(), 4 * n, stream);
    device.synchronize_stream(stream);
    std::vector<float> out(n);
    std::memcpy(out.data(), host.as(), 4 * n);
    return out;
  }

  FakeDevice device;
  StreamId stream;
};

void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want,
                      const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) {
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << " on the device path, "
                    << want[i] << " on the host path";
      return;
    }
}

std::vector<size_t> uneven(size_t n, int ranks, int shift) {
  std::vector<size_t> counts(size_t(ranks), 0);
  for (size_t i = 0; i < n; ++i) counts[(i * 7 + size_t(shift)) % size_t(ranks)] += 1;
  return counts;
}

uint64_t group_sum(uint64_t mine) {
  unsigned long long in = mine, out = 0;
  MPI_Allreduce(&in, &out, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return out;
}

// Runs allreduce, reduce_scatter, allgather, broadcast and alltoall on host
// buffers through `host` and on device buffers through `device`, and
// compares the results bit for bit.
void compare_every_collective(Communicator& host, Communicator& device, DeviceSide& side,
                              size_t n) {
  const int me = host.rank(), p = host.size();
  {
    auto want = data_of(me, n, 1);
    DeviceBuffer data = side.upload(want);
    host.allreduce(MemoryKind::kHost, want.data(), n, Role::kGradient);
    device.allreduce(MemoryKind::kDevice, data.as<float>(), n, Role::kGradient);
    expect_same_bits(side.download(data, n), want, "allreduce");
  }
  {
    const auto counts = uneven(n, p, 1);
    const auto in = data_of(me, n, 2);
    std::vector<float> want(counts[size_t(me)]);
    DeviceBuffer d_in = side.upload(in), d_out = side.zeros(counts[size_t(me)]);
    host.reduce_scatter(MemoryKind::kHost, in.data(), want.data(), counts, Role::kGradient);
    device.reduce_scatter(MemoryKind::kDevice, d_in.as<const float>(), d_out.as<float>(), counts,
                          Role::kGradient);
    expect_same_bits(side.download(d_out, counts[size_t(me)]), want, "reduce_scatter");
  }
  {
    const auto counts = uneven(n, p, 2);
    const auto in = data_of(me, counts[size_t(me)], 3);
    std::vector<float> want(n);
    DeviceBuffer d_in = side.upload(in), d_out = side.zeros(n);
    host.allgather(MemoryKind::kHost, in.data(), want.data(), counts, Role::kWeight);
    device.allgather(MemoryKind::kDevice, d_in.as<const float>(), d_out.as<float>(), counts,
                     Role::kWeight);
    expect_same_bits(side.download(d_out, n), want, "allgather");
  }
  {
    const int root = p - 1;
    auto want = me == root ? data_of(me, n, 4) : std::vector<float>(n, 0.0f);
    DeviceBuffer data = side.upload(want);
    host.broadcast(MemoryKind::kHost, want.data(), n, root, Role::kWeight);
    device.broadcast(MemoryKind::kDevice, data.as<float>(), n, root, Role::kWeight);
    expect_same_bits(side.download(data, n), want, "broadcast");
  }
  {
    // Block me -> r: (me + 2r) * n / 8p floats, ragged, some empty.
    auto count = [&](int from, int to) { return size_t(from + 2 * to) * n / size_t(8 * p); };
    std::vector<size_t> send_counts(static_cast<size_t>(p)), recv_counts(send_counts);
    size_t send_total = 0, recv_total = 0;
    for (int r = 0; r < p; ++r) {
      send_counts[size_t(r)] = count(me, r), recv_counts[size_t(r)] = count(r, me);
      send_total += send_counts[size_t(r)], recv_total += recv_counts[size_t(r)];
    }
    const auto in = data_of(me, send_total, 5);
    std::vector<float> want(recv_total);
    DeviceBuffer d_in = side.upload(in), d_out = side.zeros(recv_total);
    host.alltoall(MemoryKind::kHost, in.data(), send_counts, want.data(), recv_counts,
                  Role::kActivation);
    device.alltoall(MemoryKind::kDevice, d_in.as<const float>(), send_counts, d_out.as<float>(),
                    recv_counts, Role::kActivation);
    expect_same_bits(side.download(d_out, recv_total), want, "alltoall");
  }
}

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
    DeviceSide side(cmpi::testing::test_seed() + uint64_t(me));
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
    DeviceSide side(cmpi::testing::test_seed() + 17 * uint64_t(me));
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
