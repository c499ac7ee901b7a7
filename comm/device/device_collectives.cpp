// DeviceCollectives (device_collectives.h): the exchange patterns, as lists
// of pipeline sends and receives. The own block of an all-gather or
// all-to-all is copied device to device on the caller's stream: it never
// leaves the device; with a lossy codec the all-gather's owner then replaces
// it by its decoded version, as its peers see it.
#include "comm/device/device_collectives.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace cmpi::comm::device {
namespace {

std::vector<uint64_t> displacements(const std::vector<uint64_t>& counts) {
  std::vector<uint64_t> displs(counts.size(), 0);
  for (size_t r = 1; r < counts.size(); ++r) displs[r] = displs[r - 1] + counts[r - 1];
  return displs;
}

void check_counts(const std::vector<uint64_t>& counts, int size, const char* op) {
  if (counts.size() != size_t(size))
    throw std::invalid_argument(std::string("device ") + op + ": " + std::to_string(counts.size()) +
                                " counts for " + std::to_string(size) + " ranks");
}

}  // namespace

DeviceCollectives::DeviceCollectives(Device& device, Transport& transport,
                                     const compress::CodecSpec* codec_spec, StagingOptions options)
    : device_(device),
      transport_(transport),
      codec_(codec_spec ? device.make_codec(*codec_spec) : nullptr),
      options_(options),
      pipeline_(device, codec_.get(), options) {}

float* DeviceCollectives::workspace(size_t index, uint64_t floats, StreamId caller) {
  compress::cuda::DeviceBuffer& buffer = workspaces_[index];
  if (buffer.bytes() < 4 * floats + 4) {
    device_.synchronize_stream(caller);
    buffer = compress::cuda::DeviceBuffer(device_, 4 * floats + 4);
  }
  return buffer.as<float>();
}

void DeviceCollectives::round_trip_in_place(float* data, uint64_t n, StreamId caller) {
  if (!codec_ || codec_->lossless() || n == 0) return;
  // Up to kGroup chunks at a time: all encoded, their sizes read back with
  // one wait, all decoded, their statuses read back with a second wait. A
  // wait per chunk cost more than the codec's work where ranks share a GPU.
  constexpr uint64_t kGroup = 16;
  const uint64_t chunk = options_.chunk_floats;
  const uint64_t chunks = (n + chunk - 1) / chunk, group = std::min(kGroup, chunks);
  const uint64_t slot = (codec_->max_payload_bytes(std::min(chunk, n)) + 7) / 8 * 8;
  // Device: group payload slots, then group size words, then group status words.
  auto* scratch = reinterpret_cast<uint8_t*>(workspace(3, (group * (slot + 12) + 3) / 4, caller));
  auto* sizes = reinterpret_cast<uint64_t*>(scratch + group * slot);
  auto* statuses = reinterpret_cast<uint32_t*>(sizes + group);
  if (round_trip_host_.bytes() < 12 * group)
    round_trip_host_ = compress::cuda::PinnedBuffer(device_, 12 * group);
  auto* host_sizes = round_trip_host_.as<uint64_t>();
  auto* host_statuses = reinterpret_cast<uint32_t*>(host_sizes + group);
  for (uint64_t first_chunk = 0; first_chunk < chunks; first_chunk += group) {
    const uint64_t count = std::min(group, chunks - first_chunk);
    auto chunk_data = [&](uint64_t i) { return data + (first_chunk + i) * chunk; };
    auto chunk_length = [&](uint64_t i) { return std::min(chunk, n - (first_chunk + i) * chunk); };
    for (uint64_t i = 0; i < count; ++i)
      codec_->encode(chunk_data(i), chunk_length(i), scratch + i * slot, sizes + i, caller);
    device_.copy_to_host(host_sizes, sizes, 8 * count, caller);
    device_.synchronize_stream(caller);
    for (uint64_t i = 0; i < count; ++i)
      codec_->decode(scratch + i * slot, host_sizes[i], chunk_data(i), chunk_length(i),
                     statuses + i, caller);
    device_.copy_to_host(host_statuses, statuses, 4 * count, caller);
    device_.synchronize_stream(caller);
    for (uint64_t i = 0; i < count; ++i)
      compress::cuda::check_decode_status(host_statuses[i], *codec_);
  }
}

void DeviceCollectives::allgather(const float* in, float* out, const std::vector<uint64_t>& counts,
                                  StreamId caller) {
  const int p = size(), me = rank();
  check_counts(counts, p, "allgather");
  const std::vector<uint64_t> displs = displacements(counts);
  std::vector<int> peers;
  for (int k = 1; k < p; ++k) peers.push_back((me + k) % p);
  if (!peers.empty()) pipeline_.add_send(peers, in, counts[size_t(me)]);
  for (int k = 1; k < p; ++k) {
    const int from = (me - k + p) % p;
    pipeline_.add_recv(from, out + displs[size_t(from)], counts[size_t(from)]);
  }
  if (out + displs[size_t(me)] != in)  // in place: the own block is already there
    device_.copy_on_device(out + displs[size_t(me)], in, 4 * counts[size_t(me)], caller);
  pipeline_.run(transport_, caller);
  // The owner keeps what its peers decoded (as the CPU ring all-gather
  // does), so every rank holds the same bits. Safe in place: every chunk of
  // `in` was encoded before its send completed.
  round_trip_in_place(out + displs[size_t(me)], counts[size_t(me)], caller);
}

void DeviceCollectives::alltoall(const float* in, const std::vector<uint64_t>& send_counts,
                                 float* out, const std::vector<uint64_t>& recv_counts,
                                 StreamId caller) {
  const int p = size(), me = rank();
  check_counts(send_counts, p, "alltoall");
  check_counts(recv_counts, p, "alltoall");
  const std::vector<uint64_t> send_displs = displacements(send_counts);
  const std::vector<uint64_t> recv_displs = displacements(recv_counts);
  for (int k = 1; k < p; ++k) {
    const int to = (me + k) % p, from = (me - k + p) % p;
    pipeline_.add_send({to}, in + send_displs[size_t(to)], send_counts[size_t(to)]);
    pipeline_.add_recv(from, out + recv_displs[size_t(from)], recv_counts[size_t(from)]);
  }
  if (send_counts[size_t(me)] != recv_counts[size_t(me)])
    throw std::invalid_argument("device alltoall: rank " + std::to_string(me) + " sends itself " +
                                std::to_string(send_counts[size_t(me)]) + " floats but expects " +
                                std::to_string(recv_counts[size_t(me)]));
  device_.copy_on_device(out + recv_displs[size_t(me)], in + send_displs[size_t(me)],
                         4 * send_counts[size_t(me)], caller);
  pipeline_.run(transport_, caller);
}

void DeviceCollectives::send(const float* data, uint64_t n, int dest, StreamId caller) {
  pipeline_.add_send({dest}, data, n);
  pipeline_.run(transport_, caller);
}

void DeviceCollectives::recv(float* data, uint64_t n, int source, StreamId caller) {
  pipeline_.add_recv(source, data, n);
  pipeline_.run(transport_, caller);
}

}  // namespace cmpi::comm::device
