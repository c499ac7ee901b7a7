// The Communicator's exact sums (exact_allreduce, exact_reduce_scatter):
// for buffers several groups hold copies of and must keep bit-identical
// (parameters replicated over tp, reduced over each tp rank's own dp group).
// The policy is not asked: whatever its rules, adaptive choices or codecs,
// the sum is lossless and its order is a function of (n, group size) alone,
// so groups of the same size given the same inputs return the same bits:
//   - two ranks: the plain MPI call; each element is a + b, the same
//     whichever rank adds (float addition is commutative);
//   - more: the project's ring (comm/algorithms/ring_allreduce.cpp,
//     ring_reduce_scatter.cpp) with the identity codec, whose summation
//     order is fixed by the ranks' positions on the ring; MPI's own choice
//     of algorithm is not relied on.
// Stats: counted as plain calls of their op (the ring's framing included in
// wire_bytes); nothing is charged to preset auto's slots.
#include <stdexcept>

#include "comm/call_accounting.h"
#include "comm/communicator.h"
#include "comm/watchdog.h"
#include "compress/identity_codec.h"

namespace cmpi::comm {
namespace {

size_t total_of(const std::vector<size_t>& counts) {
  size_t total = 0;
  for (size_t c : counts) total += c;
  return total;
}

}  // namespace

const PolicySlice::Route& Communicator::exact_ring() {
  if (!exact_codec_) {
    exact_codec_ = std::make_unique<compress::IdentityCodec>(compress::CodecSpec("identity"));
    exact_ring_.codec = exact_codec_.get();
    exact_ring_.chunk_elems =
        policy_ ? policy_->plain_ring_chunk_elems() : size_t(1 << 20) / sizeof(float);
    exact_ring_.origin = "exact sum (replicated buffers)";
  }
  return exact_ring_;
}

void Communicator::exact_allreduce(float* data, size_t n, uint64_t buffer_key) {
  WatchedCall watched("allreduce", comm_);
  const uint64_t bytes = ring_allreduce_bytes(n, rank_, size_);
  OpCounters& counters = stats_.at(Op::kAllreduce);
  if (size_ <= 2) {
    PlainCall call(counters, bytes, collective_locality());
    MPI_Allreduce(MPI_IN_PLACE, data, mpi_count(n, kind_), MPI_FLOAT, MPI_SUM, comm_);
    return;
  }
  CompressedCall call(counters, collective_locality());
  counters.calls += 1;
  counters.raw_bytes += bytes;
  CompressedContext ctx = context(exact_ring(), Op::kAllreduce, internal_, next_tag(), buffer_key);
  ring_allreduce(ctx, data, n);
}

void Communicator::exact_reduce_scatter(const float* in, float* out,
                                        const std::vector<size_t>& counts, uint64_t buffer_key) {
  check_counts(counts, "reduce_scatter");
  WatchedCall watched("reduce_scatter", comm_);
  const size_t total = total_of(counts);
  const uint64_t bytes = uint64_t(total - counts[size_t(rank_)]) * sizeof(float);
  OpCounters& counters = stats_.at(Op::kReduceScatter);
  if (size_ <= 2) {
    PlainCall call(counters, bytes, collective_locality());
    MPI_Reduce_scatter(in, out, mpi_counts(counts, recv_counts_).data(), MPI_FLOAT, MPI_SUM, comm_);
    return;
  }
  CompressedCall call(counters, collective_locality());
  counters.calls += 1;
  counters.raw_bytes += bytes;
  CompressedContext ctx =
      context(exact_ring(), Op::kReduceScatter, internal_, next_tag(), buffer_key);
  ring_reduce_scatter(ctx, in, out, counts);
}

}  // namespace cmpi::comm
