// Shared pieces of the device-tagged Communicator tests (FakeDevice:
// tests/comm/device_communicator_mpi_test.cpp; CUDA:
// tests/gpu/device_communicator_cuda_mpi_test.cpp): reproducible per-rank
// data, policies of one rule, a rank's device with copies to and from it,
// and the comparison of every collective through a device-tagged call with
// the same call on host buffers, bit for bit.
#pragma once

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
#include "compress/cuda/device.h"
#include "tests/comm/communicator_test_support.h"
#include "tests/support/test_seed.h"

namespace cmpi::comm::device_testing {

using compress::cuda::DeviceBuffer;
using compress::cuda::PinnedBuffer;
using compress::cuda::StreamId;

// Smooth values plus noise (mpc and zfp compress them; sums round), which
// every rank can regenerate for any rank.
inline std::vector<float> data_of(int rank, size_t n, uint64_t salt) {
  std::mt19937_64 gen = communicator_testing::rank_generator(rank, salt);
  std::normal_distribution<float> noise(0.0f, 0.01f);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = float(3.0 * std::sin(0.002 * double(i) + rank)) + noise(gen);
  return v;
}

// No rule (codec empty): every message raw; else one rule for everything.
inline Policy policy_for(const std::string& codec, int64_t chunk_bytes, bool feedback = false) {
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

inline std::unique_ptr<Communicator> make_comm(const Policy& policy, GroupKind kind) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  return std::make_unique<Communicator>(comm, kind, std::make_unique<PolicySlice>(policy, kind));
}

// A rank's fake device, its caller stream, and copies to and from it.
struct DeviceSide {
  explicit DeviceSide(std::unique_ptr<compress::cuda::Device> device)
      : owned(std::move(device)), device(*owned), stream(this->device.create_stream()) {}

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

  std::unique_ptr<compress::cuda::Device> owned;
  compress::cuda::Device& device;
  StreamId stream;
};

inline void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want,
                             const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) {
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << " on the device path, "
                    << want[i] << " on the host path";
      return;
    }
}

using communicator_testing::uneven;

inline uint64_t group_sum(uint64_t mine) {
  unsigned long long in = mine, out = 0;
  MPI_Allreduce(&in, &out, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return out;
}

// Runs allreduce, reduce_scatter, allgather, broadcast and alltoall on host
// buffers through `host` and on device buffers through `device`, and
// compares the results bit for bit.
inline void compare_every_collective(Communicator& host, Communicator& device, DeviceSide& side,
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

}  // namespace cmpi::comm::device_testing
