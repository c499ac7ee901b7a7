// The device ring reduce-scatter and all-reduce (device_collectives.h).
//
// Reduce-scatter, N ranks, segment j = counts[j] floats ending on rank j:
//   step 1       rank r sends its own part of segment r-1 to the right and
//                receives segment r-2 from the left;
//   step s > 1   it sends on what it received at step s-1 (plus its own
//                part) and receives segment r-1-s;
//   after each   the received partial sum gets this rank's own part added
//   step         on the caller's stream (Device::add, partial + own);
// after step N-1 the received sum is segment r's total. So segment j is
// summed x[j+1] + x[j+2] + ... + x[j], the CPU ring's order
// (comm/algorithms/ring_reduce_scatter.cpp), and a lossless codec gives its
// bits. Each step is one StagingPipeline run (its chunks overlap encode,
// copies and transfers); the next step starts once the sum is queued, so
// hops do not yet overlap each other as the CPU ring's do. Partial sums
// alternate between two device workspaces (kept across calls, as work
// queued on the caller's stream may still read them when a call returns):
// one is sent while the next arrives.
//
// All-reduce: the reduce-scatter over the CPU ring all-reduce's segments,
// then the all-gather of every rank's final segment. With a lossy codec the
// owner first replaces its segment by the decoded version of what it
// sends, so all ranks hold the same bits (as on the CPU).
#include <algorithm>

#include "comm/device/device_collectives.h"

namespace cmpi::comm::device {

void DeviceCollectives::reduce_scatter(const float* in, float* out,
                                       const std::vector<uint64_t>& counts, StreamId caller) {
  const int p = size(), me = rank();
  if (counts.size() != size_t(p))
    throw std::invalid_argument("device reduce_scatter: " + std::to_string(counts.size()) +
                                " counts for " + std::to_string(p) + " ranks");
  std::vector<uint64_t> offsets(counts.size(), 0);
  for (size_t j = 1; j < counts.size(); ++j) offsets[j] = offsets[j - 1] + counts[j - 1];
  if (p == 1) {
    if (out != in) device_.copy_on_device(out, in, 4 * counts[0], caller);
    return;
  }
  const int left = (me + p - 1) % p, right = (me + 1) % p;
  auto segment_at = [&](int step) { return size_t((me - 1 - step + 2 * p) % p); };
  const uint64_t largest = *std::max_element(counts.begin(), counts.end());
  float* const partial[2] = {workspace(0, largest, caller), workspace(1, largest, caller)};

  const float* sending = in + offsets[segment_at(0)];
  uint64_t sending_n = counts[segment_at(0)];
  for (int step = 1; step < p; ++step) {
    const size_t segment = segment_at(step);
    float* arriving = partial[step % 2];
    pipeline_.add_send({right}, sending, sending_n);
    pipeline_.add_recv(left, arriving, counts[segment]);
    pipeline_.run(transport_, caller);
    device_.add(arriving, in + offsets[segment], counts[segment], caller);
    sending = arriving, sending_n = counts[segment];
  }
  device_.copy_on_device(out, sending, 4 * sending_n, caller);
}

void DeviceCollectives::allreduce(float* data, uint64_t n, StreamId caller) {
  const int p = size(), me = rank();
  if (p == 1) return;
  std::vector<uint64_t> counts(size_t(p), n / uint64_t(p));
  for (uint64_t j = 0; j < n % uint64_t(p); ++j) counts[j] += 1;
  uint64_t own_offset = 0;
  for (int j = 0; j < me; ++j) own_offset += counts[size_t(j)];
  float* own = data + own_offset;
  // The own segment is an input of the reduction: the sum goes to a buffer
  // of its own first.
  float* sum = workspace(2, counts[size_t(me)], caller);
  reduce_scatter(data, sum, counts, caller);
  device_.copy_on_device(own, sum, 4 * counts[size_t(me)], caller);
  // In place: the all-gather leaves on the owner, too, the decoded version
  // of what it sends (a lossy codec), so all ranks hold the same bits.
  allgather(own, data, counts, caller);
}

}  // namespace cmpi::comm::device
