// The device ring reduce-scatter, all-reduce and chain broadcast
// (comm/device/device_collectives.h) across MPI ranks, each rank with its own
// FakeDevice: plain (staged floats) and with the lossless device mpc codec
// they equal the CPU collectives (comm/algorithms: ring_reduce_scatter,
// ring_allreduce, chain_broadcast with the identity codec) bit for bit,
// ragged and empty segments included, with chunks small enough that every
// stream slot is reused; with a lossy codec every rank ends with the same
// bits.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <string>
#include <vector>

#include "comm/algorithms/compressed_collectives.h"
#include "comm/device/device_collectives.h"
#include "compress/cuda/fake_device.h"
#include "tests/comm/compressed_test_support.h"

namespace cmpi::comm::device {
namespace {

using cmpi::testing::make_context;
using cmpi::testing::make_data;
using cmpi::testing::PrivateComm;
using cmpi::testing::same_bits;
using cmpi::testing::stream_id;
using compress::CodecSpec;
using compress::cuda::DeviceBuffer;
using compress::cuda::FakeDevice;
using compress::cuda::PinnedBuffer;
using compress::cuda::StreamId;

const char* const kLossless[] = {"", "mpc:chunk=64", "mpc:dim=auto,chunk=32"};
constexpr uint64_t kChunk = 50;

// A rank's FakeDevice and DeviceCollectives on a duplicate of MPI_COMM_WORLD.
struct DeviceRank {
  DeviceRank(const PrivateComm& pc, const char* codec, int tag)
      : device(cmpi::testing::test_seed() + uint64_t(pc.rank())),
        transport(pc.comm(), tag),
        spec(*codec ? CodecSpec::parse(codec) : CodecSpec()),
        collectives(device, transport, *codec ? &spec : nullptr, {3, kChunk}),
        caller(device.create_stream()) {}

  DeviceBuffer upload(const std::vector<float>& x) {
    DeviceBuffer buffer(device, 4 * x.size() + 4);
    PinnedBuffer host(device, 4 * x.size() + 4);
    std::memcpy(host.as(), x.data(), 4 * x.size());
    device.copy_to_device(buffer.as(), host.as(), 4 * x.size(), caller);
    device.synchronize_stream(caller);
    return buffer;
  }
  std::vector<float> download(const DeviceBuffer& buffer, uint64_t n) {
    PinnedBuffer host(device, 4 * n + 4);
    device.copy_to_host(host.as(), buffer.as(), 4 * n, caller);
    device.synchronize_stream(caller);
    std::vector<float> out(n);
    std::memcpy(out.data(), host.as(), 4 * n);
    return out;
  }

  FakeDevice device;
  MpiTransport transport;
  CodecSpec spec;
  DeviceCollectives collectives;
  StreamId caller;
};

// Whether every rank holds the same bits in x.
bool same_on_every_rank(const std::vector<float>& x, MPI_Comm comm) {
  std::vector<float> root(x);
  MPI_Bcast(root.data(), int(root.size()), MPI_FLOAT, 0, comm);
  int same = std::memcmp(root.data(), x.data(), 4 * x.size()) == 0, all = 0;
  MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_LAND, comm);
  return all != 0;
}

TEST(DeviceRingMpi, ReduceScatterEqualsTheCpuRing) {
  PrivateComm pc;
  const int me = pc.rank(), p = pc.size();
  std::vector<size_t> counts(static_cast<size_t>(p));
  for (int r = 0; r < p; ++r) counts[size_t(r)] = r == 1 ? 0 : 97 + 31 * size_t(r);
  size_t total = 0;
  for (size_t c : counts) total += c;
  const std::vector<float> in =
      make_data(stream_id(41, 0, uint64_t(me)), total, false, 1.f + 37.f * float(me));
  auto identity = compress::make_codec(CodecSpec::parse("identity"));
  CompressedContext ctx = make_context(pc, identity.get(), 64);
  std::vector<float> want(counts[size_t(me)] + 1);
  ring_reduce_scatter(ctx, in.data(), want.data(), counts);
  want.pop_back();
  for (const char* codec : kLossless) {
    SCOPED_TRACE(std::string("codec '") + codec + "', rank " + std::to_string(me));
    DeviceRank rank(pc, codec, 921);
    DeviceBuffer input = rank.upload(in), output(rank.device, 4 * counts[size_t(me)] + 4);
    rank.collectives.reduce_scatter(input.as<float>(), output.as<float>(),
                                    std::vector<uint64_t>(counts.begin(), counts.end()),
                                    rank.caller);
    const std::vector<float> got = rank.download(output, counts[size_t(me)]);
    ASSERT_TRUE(same_bits(got.data(), want.data(), want.size()));
  }
}

TEST(DeviceRingMpi, AllreduceEqualsTheCpuRing) {
  PrivateComm pc;
  const int me = pc.rank(), p = pc.size();
  for (size_t n : {size_t(1), size_t(3 * p - 1), size_t(1000)}) {
    // Magnitudes that differ per rank, so that the summation order shows.
    const std::vector<float> in =
        make_data(stream_id(42, n, uint64_t(me)), n, false, 1.f + 37.f * float(me));
    auto identity = compress::make_codec(CodecSpec::parse("identity"));
    CompressedContext ctx = make_context(pc, identity.get(), 64);
    std::vector<float> want(in);
    ring_allreduce(ctx, want.data(), n);
    for (const char* codec : kLossless) {
      SCOPED_TRACE(std::string("codec '") + codec + "', n " + std::to_string(n) + ", rank " +
                   std::to_string(me));
      DeviceRank rank(pc, codec, 922);
      DeviceBuffer data = rank.upload(in);
      rank.collectives.allreduce(data.as<float>(), n, rank.caller);
      const std::vector<float> got = rank.download(data, n);
      ASSERT_TRUE(same_bits(got.data(), want.data(), n));
    }
  }
}

TEST(DeviceRingMpi, BroadcastEqualsTheCpuChain) {
  PrivateComm pc;
  const int me = pc.rank(), p = pc.size();
  const size_t n = 777;
  for (int root = 0; root < p; ++root) {
    const std::vector<float> in = make_data(stream_id(43, uint64_t(root), uint64_t(me)), n, true);
    auto identity = compress::make_codec(CodecSpec::parse("identity"));
    CompressedContext ctx = make_context(pc, identity.get(), 64);
    std::vector<float> want(in);
    chain_broadcast(ctx, want.data(), n, root);
    for (const char* codec : kLossless) {
      SCOPED_TRACE(std::string("codec '") + codec + "', root " + std::to_string(root) + ", rank " +
                   std::to_string(me));
      DeviceRank rank(pc, codec, 923);
      DeviceBuffer data = rank.upload(in);
      rank.collectives.broadcast(data.as<float>(), n, root, rank.caller);
      const std::vector<float> got = rank.download(data, n);
      ASSERT_TRUE(same_bits(got.data(), want.data(), n));
    }
  }
}

TEST(DeviceRingMpi, LossyCodecLeavesTheSameBitsOnEveryRank) {
  PrivateComm pc;
  const int me = pc.rank(), p = pc.size();
  const size_t n = 1001;  // 21 chunks: the broadcast root's round trip takes two groups of 16
  const std::vector<float> in = make_data(stream_id(44, 0, uint64_t(me)), n, false);
  DeviceRank rank(pc, "zfp:rate=12,chunk=40", 924);
  DeviceBuffer data = rank.upload(in);
  rank.collectives.allreduce(data.as<float>(), n, rank.caller);
  const std::vector<float> summed = rank.download(data, n);
  EXPECT_TRUE(same_on_every_rank(summed, pc.comm())) << "allreduce, rank " << me;
  std::vector<float> exact(n, 0.f);
  for (int r = 0; r < p; ++r) {
    const std::vector<float> x = make_data(stream_id(44, 0, uint64_t(r)), n, false);
    for (size_t i = 0; i < n; ++i) exact[i] += x[i];
  }
  for (size_t i = 0; i < n; ++i) ASSERT_NEAR(summed[i], exact[i], 0.05 * p) << "element " << i;

  DeviceBuffer root_data = rank.upload(in);
  rank.collectives.broadcast(root_data.as<float>(), n, p - 1, rank.caller);
  const std::vector<float> broadcast = rank.download(root_data, n);
  EXPECT_TRUE(same_on_every_rank(broadcast, pc.comm())) << "broadcast, rank " << me;
}

}  // namespace
}  // namespace cmpi::comm::device
