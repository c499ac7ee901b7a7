// DeviceCollectives (comm/device/device_collectives.h) across MPI ranks, each
// rank with its own FakeDevice: plain staged all-gather and all-to-all equal
// MPI's bit for bit; compressed ones equal each block run through the CPU
// codec (encode, decode) bit for bit (the all-gather's own block on its owner
// too, as on the CPU ring), ragged counts and empty blocks
// included, with chunks small enough that every stream slot is reused.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <string>
#include <vector>

#include "comm/device/device_collectives.h"
#include "compress/codec_registry.h"
#include "compress/cuda/fake_device.h"
#include "tests/support/float_data.h"
#include "tests/support/mpi_world.h"
#include "tests/support/test_seed.h"

namespace cmpi::comm::device {
namespace {

using compress::CodecSpec;
using compress::cuda::DeviceBuffer;
using compress::cuda::FakeDevice;
using compress::cuda::PinnedBuffer;

// Block `from` -> `to` of the all-to-all (and, with to = -1, rank from's shard).
std::vector<float> block(uint64_t n, int from, int to, uint64_t seed) {
  return cmpi::testing::gaussian(n, 1.f, seed * 1000003 + uint64_t(from) * 131 + uint64_t(to + 1));
}

std::vector<float> through(const std::string& codec, const std::vector<float>& x, uint64_t chunk) {
  if (codec.empty()) return x;
  auto cpu = compress::make_codec(CodecSpec::parse(codec));
  std::vector<float> out(x.size());
  for (uint64_t first = 0; first < x.size(); first += chunk) {
    const uint64_t len = std::min(chunk, x.size() - first);
    const auto payload = cpu->encode(x.data() + first, len);
    cpu->decode(payload.data(), payload.size(), out.data() + first, len);
  }
  return out;
}

std::vector<float> to_host(FakeDevice& device, const DeviceBuffer& buffer, uint64_t n,
                           compress::cuda::StreamId stream) {
  PinnedBuffer host(device, 4 * n + 4);
  device.copy_to_host(host.as(), buffer.as(), 4 * n, stream);
  device.synchronize_stream(stream);
  std::vector<float> out(n);
  std::memcpy(out.data(), host.as(), 4 * n);
  return out;
}

void upload(FakeDevice& device, const DeviceBuffer& buffer, const std::vector<float>& x,
            PinnedBuffer& staging, compress::cuda::StreamId stream) {
  std::memcpy(staging.as(), x.data(), 4 * x.size());
  device.copy_to_device(buffer.as(), staging.as(), 4 * x.size(), stream);  // left queued
}

const char* const kCodecs[] = {"", "fp16", "zfp:rate=16,chunk=40", "sign:bucket=32"};
constexpr uint64_t kChunk = 50;

TEST(DeviceCollectivesMpi, AllgatherEqualsMpiOrTheCpuCodecPerBlock) {
  const int me = cmpi::testing::world_rank(), p = cmpi::testing::world_size();
  const uint64_t seed = cmpi::testing::test_seed();
  for (const char* codec : kCodecs) {
    SCOPED_TRACE(std::string("codec '") + codec + "', seed " + std::to_string(seed));
    std::vector<uint64_t> counts(static_cast<size_t>(p), 0);
    for (int r = 0; r < p; ++r) counts[size_t(r)] = r == 1 ? 0 : 97 + 31 * uint64_t(r);
    uint64_t total = 0;
    for (uint64_t c : counts) total += c;
    FakeDevice device(seed + uint64_t(me));
    MpiTransport transport(MPI_COMM_WORLD, 911);
    const CodecSpec spec = *codec ? CodecSpec::parse(codec) : CodecSpec();
    DeviceCollectives collectives(device, transport, *codec ? &spec : nullptr, {3, kChunk});
    const auto caller = device.create_stream();
    const std::vector<float> mine = block(counts[size_t(me)], me, -1, seed);
    DeviceBuffer in(device, 4 * mine.size() + 4), out(device, 4 * total + 4);
    PinnedBuffer staging(device, 4 * mine.size() + 4);
    upload(device, in, mine, staging, caller);
    collectives.allgather(in.as<float>(), out.as<float>(), counts, caller);
    const std::vector<float> got = to_host(device, out, total, caller);

    std::vector<float> want;
    for (int r = 0; r < p; ++r) {
      const std::vector<float> shard = block(counts[size_t(r)], r, -1, seed);
      // The owner keeps the decoded version too (a lossy codec).
      const std::vector<float> seen = through(codec, shard, kChunk);
      want.insert(want.end(), seen.begin(), seen.end());
    }
    ASSERT_EQ(0, std::memcmp(got.data(), want.data(), 4 * total)) << "rank " << me;
  }
}

TEST(DeviceCollectivesMpi, AlltoallEqualsMpiOrTheCpuCodecPerBlock) {
  const int me = cmpi::testing::world_rank(), p = cmpi::testing::world_size();
  const uint64_t seed = cmpi::testing::test_seed();
  auto count = [](int from, int to) {
    return (from + to) % 3 == 2 ? 0 : 60 + 17 * uint64_t(from + 2 * to);
  };
  for (const char* codec : kCodecs) {
    SCOPED_TRACE(std::string("codec '") + codec + "', seed " + std::to_string(seed));
    std::vector<uint64_t> send_counts(static_cast<size_t>(p), 0), recv_counts(send_counts);
    std::vector<float> input;
    for (int r = 0; r < p; ++r) {
      send_counts[size_t(r)] = count(me, r), recv_counts[size_t(r)] = count(r, me);
      const std::vector<float> b = block(count(me, r), me, r, seed);
      input.insert(input.end(), b.begin(), b.end());
    }
    uint64_t total = 0;
    for (uint64_t c : recv_counts) total += c;
    FakeDevice device(seed + 7 * uint64_t(me));
    MpiTransport transport(MPI_COMM_WORLD, 912);
    const CodecSpec spec = *codec ? CodecSpec::parse(codec) : CodecSpec();
    DeviceCollectives collectives(device, transport, *codec ? &spec : nullptr, {2, kChunk});
    const auto caller = device.create_stream();
    DeviceBuffer in(device, 4 * input.size() + 4), out(device, 4 * total + 4);
    PinnedBuffer staging(device, 4 * input.size() + 4);
    upload(device, in, input, staging, caller);
    collectives.alltoall(in.as<float>(), send_counts, out.as<float>(), recv_counts, caller);
    const std::vector<float> got = to_host(device, out, total, caller);

    std::vector<float> want;
    for (int r = 0; r < p; ++r) {
      const std::vector<float> b = block(count(r, me), r, me, seed);
      const std::vector<float> seen = r == me ? b : through(codec, b, kChunk);
      want.insert(want.end(), seen.begin(), seen.end());
    }
    ASSERT_EQ(0, std::memcmp(got.data(), want.data(), 4 * total)) << "rank " << me;
  }
}

}  // namespace
}  // namespace cmpi::comm::device
