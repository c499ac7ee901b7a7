#include "comm/communicator.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <string>

#include "comm/adaptive_call.h"
#include "comm/algorithms/block_sparse_allreduce.h"
#include "comm/algorithms/chunk_transfer.h"
#include "comm/algorithms/codec_steps.h"
#include "comm/call_accounting.h"
#include "comm/communicator_pending.h"
#include "comm/node_grouping.h"
#include "comm/watchdog.h"
#include "compress/block_sparse_codec.h"
#include "compress/identity_codec.h"

namespace cmpi::comm {
namespace {

// MPI guarantees at least this many tags; compressed collectives and halo
// exchanges cycle through them on the private communicator.
constexpr int kTagCycle = 32767;

size_t total_of(const std::vector<size_t>& counts) {
  return std::accumulate(counts.begin(), counts.end(), size_t(0));
}

// The bytes a rank sends, uncompressed, in the bandwidth-optimal algorithm
// of each operation (the ring and chain the compressed path runs), so that
// raw and wire bytes of both paths compare like for like.
uint64_t chain_broadcast_bytes(size_t n, int rank, int root, int size) {
  bool last = (rank - root + size) % size == size - 1;
  return last ? 0 : uint64_t(n) * sizeof(float);
}

}  // namespace

uint64_t ring_allreduce_bytes(size_t n, int rank, int size, size_t word_bytes) {
  if (size == 1) return 0;
  auto segment = [&](int j) { return n / size_t(size) + (size_t(j) < n % size_t(size) ? 1 : 0); };
  return uint64_t(2 * n - segment(rank) - segment((rank + 1) % size)) * word_bytes;
}

int mpi_count(size_t n, GroupKind group) {
  if (n > size_t(INT_MAX))
    throw std::length_error(std::string("group ") + to_string(group) + ": buffer of " +
                            std::to_string(n) + " elements exceeds INT_MAX");
  return int(n);
}

int shared_memory_node(MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  return agree_node_grouping(comm).node_of_rank[size_t(rank)];
}

Communicator::Request::Request() = default;
Communicator::Request::Request(Request&&) noexcept = default;

Communicator::Request& Communicator::Request::operator=(Request&& other) noexcept {
  if (this != &other) {
    Request discard(std::move(*this));
    op_ = std::move(other.op_);
  }
  return *this;
}

Communicator::Request::~Request() {
  if (op_) op_->abandon();
}

// ------------------------------------------------------------ lifetime

Communicator::Communicator(MPI_Comm comm, GroupKind kind) : Communicator(comm, kind, nullptr) {}

Communicator::Communicator(MPI_Comm comm, GroupKind kind, std::unique_ptr<PolicySlice> policy,
                           int node)
    : comm_(comm), kind_(kind), policy_(std::move(policy)) {
  if (policy_ && policy_->group() != kind)
    throw std::invalid_argument(std::string("group ") + to_string(kind) +
                                ": given the policy slice of group " + to_string(policy_->group()));
  WatchedCall watched("communicator setup", comm_);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  // Named after the group, so that the watchdog's message on a call stuck
  // on either communicator says which group it was.
  if (comm_ != MPI_COMM_WORLD) MPI_Comm_set_name(comm_, to_string(kind_));
  // The compressed algorithms and halos exchange point-to-point messages; on
  // a communicator of their own these can never match the caller's sends.
  MPI_Comm_dup(comm_, &internal_);
  MPI_Comm_set_name(internal_, to_string(kind_));
  if (policy_ && policy_->plain_ring_min_bytes() > 0) {
    ring_codec_ = std::make_unique<compress::IdentityCodec>(compress::CodecSpec("identity"));
    plain_ring_.codec = ring_codec_.get();
    plain_ring_.chunk_elems = policy_->plain_ring_chunk_elems();
    plain_ring_.origin = "plain ring (compression.plain_ring_min_bytes)";
  }
  if (policy_ && !policy_->auto_rules().empty())
    adaptive_ = std::make_unique<AdaptivePolicy>(*policy_, policy_->auto_settings());
  if (node < 0) node = shared_memory_node(comm_);
  node_of_rank_.assign(size_t(size_), 0);
  MPI_Allgather(&node, 1, MPI_INT, node_of_rank_.data(), 1, MPI_INT, comm_);
  spans_nodes_ = std::any_of(node_of_rank_.begin(), node_of_rank_.end(),
                             [&](int n) { return n != node_of_rank_[0]; });
}

Communicator::~Communicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (internal_ != MPI_COMM_NULL) MPI_Comm_free(&internal_);
  if (comm_ != MPI_COMM_WORLD && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

std::vector<AutoDecision> Communicator::adapt(int64_t step, double previous_loss) {
  if (!adaptive_) return {};
  WatchedCall watched("adapt (preset auto)", comm_);
  return adaptive_->decide(comm_, step, previous_loss);
}

std::vector<std::string> Communicator::restore_codec_state(const CodecState& state) {
  if (!policy_) {
    std::vector<std::string> dropped;
    for (const auto& kv : state.residuals) dropped.push_back(kv.first);
    for (const auto& kv : state.random_states) dropped.push_back(kv.first);
    return dropped;
  }
  return policy_->restore_codec_state(state);
}

// ------------------------------------------------------------ helpers

void Communicator::check_counts(const std::vector<size_t>& counts, const char* op) const {
  if (counts.size() != size_t(size_))
    throw std::invalid_argument(std::string("group ") + to_string(kind_) + ": " + op + " got " +
                                std::to_string(counts.size()) + " counts for " +
                                std::to_string(size_) + " ranks");
}

void Communicator::check_peer(int peer, const char* what, const char* op) const {
  if (peer < 0 || peer >= size_)
    throw std::invalid_argument(std::string("group ") + to_string(kind_) + ": " + op + " " + what +
                                " " + std::to_string(peer) + " is not a rank of " +
                                std::to_string(size_));
}

const std::vector<int>& Communicator::mpi_counts(const std::vector<size_t>& counts,
                                                 std::vector<int>& out) {
  out.resize(counts.size());
  for (size_t i = 0; i < counts.size(); ++i) out[i] = mpi_count(counts[i], kind_);
  return out;
}

const std::vector<int>& Communicator::mpi_displs(const std::vector<int>& counts,
                                                 std::vector<int>& out) {
  out.resize(counts.size());
  long long offset = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (offset > INT_MAX)
      throw std::length_error(std::string("group ") + to_string(kind_) +
                              ": collective spans more than INT_MAX elements");
    out[i] = int(offset);
    offset += counts[i];
  }
  return out;
}

size_t Communicator::agreed_bytes(Op op, Role role, size_t local_bytes) {
  if (!policy_ || policy_->size_independent(op, role, collective_locality())) return local_bytes;
  unsigned long long mine = local_bytes, largest = 0;
  MPI_Allreduce(&mine, &largest, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm_);
  return size_t(largest);
}

int Communicator::next_tag() {
  int tag = tag_sequence_;
  tag_sequence_ = (tag_sequence_ + 1) % kTagCycle;
  return tag;
}

CompressedContext Communicator::context(const Route& route, Op op, MPI_Comm comm, int tag,
                                        uint64_t buffer_key) {
  CompressedContext ctx;
  ctx.comm = comm;
  ctx.rank = rank_;
  ctx.size = size_;
  ctx.group = kind_;
  ctx.codec = route.codec;
  ctx.feedback = route.feedback;
  ctx.buffer_key = buffer_key;
  ctx.chunk_elems = route.chunk_elems;
  ctx.tag = tag;
  ctx.counters = &stats_.at(op);
  return ctx;
}

void Communicator::begin_compressed(const Route& route, Op op, uint64_t raw_bytes, const float* own,
                                    size_t own_n) {
  OpCounters& counters = stats_.at(op);
  counters.calls += 1;
  counters.compressed_calls += 1;
  counters.raw_bytes += raw_bytes;
  if (route.codec->lossless() || policy_->sample_every() == 0 || own == nullptr) return;
  // Deterministic sampling: the first lossy call of each op, then every k-th.
  if (lossy_calls_[int(op)]++ % policy_->sample_every() != 0) return;
  sample_error(*route.codec, counters, own, std::min(own_n, route.chunk_elems));
}

void Communicator::sample_error(compress::Codec& codec, OpCounters& counters, const float* own,
                                size_t n) {
  if (n == 0) return;
  // Encodes the first chunk of this rank's own contribution once more, on
  // the side, with the rule's codec (not through error feedback, whose
  // residuals must only see real traffic), and compares the decoded values.
  // A stochastic codec's generator is put back afterwards, so measuring
  // changes none of the real traffic (and a resumed run, whose call counts
  // restart, sends exactly what the uninterrupted run would).
  const std::vector<uint64_t> random_state = codec.random_state();
  sample_payload_.resize(codec.max_encoded_bytes(n));
  sample_decoded_.resize(n);
  size_t bytes = codec.encode(own, n, sample_payload_.data(), sample_payload_.size());
  if (!random_state.empty()) codec.restore_random_state(random_state);
  codec.decode(sample_payload_.data(), bytes, sample_decoded_.data(), n);
  double diff = 0, norm = 0;
  for (size_t i = 0; i < n; ++i) {
    double d = double(sample_decoded_[i]) - double(own[i]);
    diff += d * d;
    norm += double(own[i]) * double(own[i]);
  }
  // A zero or non-finite reference has no meaningful relative error.
  if (!(norm > 0) || !std::isfinite(norm) || !std::isfinite(diff)) return;
  counters.error_sum += std::sqrt(diff / norm);
  counters.error_samples += 1;
}

// ------------------------------------------------------------ collectives

void Communicator::allreduce(float* data, size_t n, Role role, uint64_t buffer_key) {
  WatchedCall watched("allreduce", comm_);
  const uint64_t bytes = ring_allreduce_bytes(n, rank_, size_);
  const Locality locality = collective_locality();
  const Route* found = find_route(Op::kAllreduce, role, n * sizeof(float), locality);
  AdaptiveCall adaptive(adaptive_.get(), found, Op::kAllreduce, role, locality,
                        stats_.at(Op::kAllreduce), data, n);
  const Route* route = compressing(found);
  while (route != nullptr && route->codec->id() == compress::CodecId::kBlockSparse) {
    // Too dense for the block-sparse path to pay: the route the next
    // matching rule gives (all ranks agree: they decided on the same sum).
    const Route* fallback =
        compressing_route_after(*route, Op::kAllreduce, role, n * sizeof(float), locality);
    if (block_sparse_allreduce_if_cheaper(*route, fallback, data, n, bytes, buffer_key)) return;
    route = fallback;
  }
  if (route != nullptr) {
    if (sparsified_block_sparse_pays(*route, data, n)) {
      sparsified_block_sparse_allreduce(*route, data, n, bytes, buffer_key);
      return;
    }
    CompressedCall call(stats_.at(Op::kAllreduce), locality);
    begin_compressed(*route, Op::kAllreduce, bytes, data, n);
    CompressedContext ctx = context(*route, Op::kAllreduce, internal_, next_tag(), buffer_key);
    ring_allreduce(ctx, data, n);
    return;
  }
  if (takes_plain_ring(n)) {
    // Raw, but on the pipelined ring rather than MPI's own choice of
    // algorithm (see PolicyConfig::plain_ring_min_bytes); counted as a plain
    // call whose wire bytes include the ring's framing.
    OpCounters& counters = stats_.at(Op::kAllreduce);
    CompressedCall call(counters, collective_locality());
    counters.calls += 1;
    counters.raw_bytes += bytes;
    raw_allreduce(data, n, buffer_key, counters);
    return;
  }
  PlainCall call(stats_.at(Op::kAllreduce), bytes, collective_locality());
  raw_allreduce(data, n, buffer_key, stats_.at(Op::kAllreduce));
}

bool Communicator::takes_plain_ring(size_t n) const {
  return ring_codec_ && size_ > 2 && n * sizeof(float) >= policy_->plain_ring_min_bytes();
}

void Communicator::raw_allreduce(float* data, size_t n, uint64_t buffer_key, OpCounters& counters) {
  if (takes_plain_ring(n)) {
    CompressedContext ctx = context(plain_ring_, Op::kAllreduce, internal_, next_tag(), buffer_key);
    ctx.counters = &counters;
    ring_allreduce(ctx, data, n);
    return;
  }
  MPI_Allreduce(MPI_IN_PLACE, data, mpi_count(n, kind_), MPI_FLOAT, MPI_SUM, comm_);
}

void Communicator::reduce_scatter(const float* in, float* out, const std::vector<size_t>& counts,
                                  Role role, uint64_t buffer_key) {
  check_counts(counts, "reduce_scatter");
  WatchedCall watched("reduce_scatter", comm_);
  const size_t total = total_of(counts);
  const uint64_t bytes = uint64_t(total - counts[rank_]) * sizeof(float);
  const Route* found =
      find_route(Op::kReduceScatter, role, total * sizeof(float), collective_locality());
  AdaptiveCall adaptive(adaptive_.get(), found, Op::kReduceScatter, role, collective_locality(),
                        stats_.at(Op::kReduceScatter), in, total);
  if (const Route* route = compressing(found)) {
    CompressedCall call(stats_.at(Op::kReduceScatter), collective_locality());
    begin_compressed(*route, Op::kReduceScatter, bytes, in, total);
    CompressedContext ctx = context(*route, Op::kReduceScatter, internal_, next_tag(), buffer_key);
    ring_reduce_scatter(ctx, in, out, counts);
    return;
  }
  PlainCall call(stats_.at(Op::kReduceScatter), bytes, collective_locality());
  MPI_Reduce_scatter(in, out, mpi_counts(counts, recv_counts_).data(), MPI_FLOAT, MPI_SUM, comm_);
}

void Communicator::allgather(const float* in, float* out, const std::vector<size_t>& counts,
                             Role role, uint64_t buffer_key) {
  check_counts(counts, "allgather");
  WatchedCall watched("allgather", comm_);
  const size_t total = total_of(counts);
  const uint64_t bytes = uint64_t(total - counts[(rank_ + 1) % size_]) * sizeof(float);
  const Route* found =
      find_route(Op::kAllgather, role, total * sizeof(float), collective_locality());
  AdaptiveCall adaptive(adaptive_.get(), found, Op::kAllgather, role, collective_locality(),
                        stats_.at(Op::kAllgather), in, counts[rank_]);
  if (const Route* route = compressing(found)) {
    CompressedCall call(stats_.at(Op::kAllgather), collective_locality());
    begin_compressed(*route, Op::kAllgather, bytes, in, counts[rank_]);
    CompressedContext ctx = context(*route, Op::kAllgather, internal_, next_tag(), buffer_key);
    ring_allgather(ctx, in, out, counts);
    return;
  }
  PlainCall call(stats_.at(Op::kAllgather), bytes, collective_locality());
  const auto& c = mpi_counts(counts, recv_counts_);
  const auto& displs = mpi_displs(c, recv_displs_);
  MPI_Allgatherv(in, c[rank_], MPI_FLOAT, out, c.data(), displs.data(), MPI_FLOAT, comm_);
}

void Communicator::broadcast(float* data, size_t n, int root, Role role, uint64_t buffer_key) {
  check_peer(root, "root", "broadcast");
  WatchedCall watched("broadcast", comm_);
  const uint64_t bytes = chain_broadcast_bytes(n, rank_, root, size_);
  const Route* found = find_route(Op::kBroadcast, role, n * sizeof(float), collective_locality());
  AdaptiveCall adaptive(adaptive_.get(), found, Op::kBroadcast, role, collective_locality(),
                        stats_.at(Op::kBroadcast), rank_ == root ? data : nullptr, n);
  if (const Route* route = compressing(found)) {
    CompressedCall call(stats_.at(Op::kBroadcast), collective_locality());
    begin_compressed(*route, Op::kBroadcast, bytes, rank_ == root ? data : nullptr, n);
    CompressedContext ctx = context(*route, Op::kBroadcast, internal_, next_tag(), buffer_key);
    chain_broadcast(ctx, data, n, root);
    return;
  }
  PlainCall call(stats_.at(Op::kBroadcast), bytes, collective_locality());
  MPI_Bcast(data, mpi_count(n, kind_), MPI_FLOAT, root, comm_);
}

void Communicator::alltoall(const float* in, const std::vector<size_t>& send_counts, float* out,
                            const std::vector<size_t>& recv_counts, Role role,
                            uint64_t buffer_key) {
  check_counts(send_counts, "alltoall");
  check_counts(recv_counts, "alltoall");
  WatchedCall watched("alltoall", comm_);
  const size_t send_total = total_of(send_counts);
  const uint64_t bytes = uint64_t(send_total - send_counts[rank_]) * sizeof(float);
  const size_t policy_bytes = agreed_bytes(Op::kAlltoall, role, send_total * sizeof(float));
  const Route* found = find_route(Op::kAlltoall, role, policy_bytes, collective_locality());
  AdaptiveCall adaptive(adaptive_.get(), found, Op::kAlltoall, role, collective_locality(),
                        stats_.at(Op::kAlltoall), in, send_total);
  if (const Route* route = compressing(found)) {
    CompressedCall call(stats_.at(Op::kAlltoall), collective_locality());
    // The first block this rank actually sends elsewhere is its sample.
    size_t offset = 0, sample_n = 0;
    for (int j = 0; j < size_ && sample_n == 0; ++j) {
      if (j != rank_) sample_n = send_counts[j];
      if (sample_n == 0) offset += send_counts[j];
    }
    begin_compressed(*route, Op::kAlltoall, bytes, in + offset, sample_n);
    CompressedContext ctx = context(*route, Op::kAlltoall, internal_, next_tag(), buffer_key);
    compressed_alltoall(ctx, in, send_counts, out, recv_counts);
    return;
  }
  PlainCall call(stats_.at(Op::kAlltoall), bytes, collective_locality());
  const auto& sc = mpi_counts(send_counts, send_counts_);
  const auto& rc = mpi_counts(recv_counts, recv_counts_);
  const auto& sd = mpi_displs(sc, send_displs_);
  const auto& rd = mpi_displs(rc, recv_displs_);
  MPI_Alltoallv(in, sc.data(), sd.data(), MPI_FLOAT, out, rc.data(), rd.data(), MPI_FLOAT, comm_);
}

void Communicator::halo_exchange(const HaloBuffers& b, Role role, uint64_t buffer_key) {
  const int lo_peer = b.lower_peer(rank_), hi_peer = b.upper_peer(rank_, size_);
  if (lo_peer != HaloBuffers::kNoPeer) check_peer(lo_peer, "lo_peer", "halo_exchange");
  if (hi_peer != HaloBuffers::kNoPeer) check_peer(hi_peer, "hi_peer", "halo_exchange");
  WatchedCall watched("halo_exchange", comm_);
  const bool has_lo = lo_peer != HaloBuffers::kNoPeer, has_hi = hi_peer != HaloBuffers::kNoPeer;
  const size_t send_lo = has_lo ? b.send_lo_count : 0, send_hi = has_hi ? b.send_hi_count : 0;
  const size_t recv_lo = has_lo ? b.recv_lo_count : 0, recv_hi = has_hi ? b.recv_hi_count : 0;
  const uint64_t bytes = uint64_t(send_lo + send_hi) * sizeof(float);
  const size_t largest = std::max(std::max(send_lo, send_hi), std::max(recv_lo, recv_hi));
  const size_t policy_bytes = agreed_bytes(Op::kHalo, role, largest * sizeof(float));
  const Route* found = find_route(Op::kHalo, role, policy_bytes, collective_locality());
  AdaptiveCall adaptive(adaptive_.get(), found, Op::kHalo, role, collective_locality(),
                        stats_.at(Op::kHalo), send_lo ? b.send_lo : b.send_hi,
                        send_lo ? send_lo : send_hi, (recv_lo + recv_hi) * sizeof(float));
  if (const Route* route = compressing(found)) {
    CompressedCall call(stats_.at(Op::kHalo), collective_locality());
    begin_compressed(*route, Op::kHalo, bytes, send_lo ? b.send_lo : b.send_hi,
                     send_lo ? send_lo : send_hi);
    CompressedContext ctx = context(*route, Op::kHalo, internal_, next_tag(), buffer_key);
    comm::halo_exchange(ctx, b);
    return;
  }
  PlainCall call(stats_.at(Op::kHalo), bytes, collective_locality());
  const int lo = has_lo ? lo_peer : MPI_PROC_NULL, hi = has_hi ? hi_peer : MPI_PROC_NULL;
  const int tag = next_tag();
  // Upward first (my upper rows become my upper neighbour's lower halo), then
  // downward; MPI_PROC_NULL turns the missing side of the end ranks into no-ops.
  MPI_Status status;
  MPI_Sendrecv(b.send_hi, mpi_count(send_hi, kind_), MPI_FLOAT, hi, tag, b.recv_lo,
               mpi_count(recv_lo, kind_), MPI_FLOAT, lo, tag, internal_, &status);
  int got_lo = 0;
  MPI_Get_count(&status, MPI_FLOAT, &got_lo);
  MPI_Sendrecv(b.send_lo, mpi_count(send_lo, kind_), MPI_FLOAT, lo, tag, b.recv_hi,
               mpi_count(recv_hi, kind_), MPI_FLOAT, hi, tag, internal_, &status);
  int got_hi = 0;
  MPI_Get_count(&status, MPI_FLOAT, &got_hi);
  if ((has_lo && size_t(got_lo) != recv_lo) || (has_hi && size_t(got_hi) != recv_hi))
    throw std::runtime_error(std::string("group ") + to_string(kind_) + ": halo_exchange on rank " +
                             std::to_string(rank_) + ": expected " + std::to_string(recv_lo) +
                             " + " + std::to_string(recv_hi) + " halo elements, neighbours sent " +
                             std::to_string(has_lo ? got_lo : 0) + " + " +
                             std::to_string(has_hi ? got_hi : 0));
}

// ------------------------------------------------------------ point to point

void Communicator::send(const float* data, size_t n, int dest, int tag, Role role,
                        uint64_t buffer_key) {
  check_peer(dest, "dest", "send");
  WatchedCall watched("send", comm_, dest);
  const uint64_t bytes = uint64_t(n) * sizeof(float);
  const Route* found = find_route(Op::kSendRecv, role, bytes, peer_locality(dest));
  AdaptiveCall adaptive(adaptive_.get(), found, Op::kSendRecv, role, peer_locality(dest),
                        stats_.at(Op::kSendRecv), data, n);
  if (const Route* route = compressing(found)) {
    CompressedCall call(stats_.at(Op::kSendRecv), peer_locality(dest));
    begin_compressed(*route, Op::kSendRecv, bytes, data, n);
    CompressedContext ctx = context(*route, Op::kSendRecv, comm_, tag, buffer_key);
    compressed_send(ctx, data, n, dest);
    return;
  }
  PlainCall call(stats_.at(Op::kSendRecv), bytes, peer_locality(dest));
  MPI_Send(data, mpi_count(n, kind_), MPI_FLOAT, dest, tag, comm_);
}

void Communicator::recv(float* data, size_t n, int source, int tag, Role role) {
  check_peer(source, "source", "recv");
  WatchedCall watched("recv", comm_, source);
  // Received bytes are counted by the sender; only time is added here.
  const Route* found = find_route(Op::kSendRecv, role, n * sizeof(float), peer_locality(source));
  AdaptiveCall adaptive(adaptive_.get(), found, Op::kSendRecv, role, peer_locality(source),
                        stats_.at(Op::kSendRecv), nullptr, 0, n * sizeof(float));
  if (const Route* route = compressing(found)) {
    CompressedCall call(stats_.at(Op::kSendRecv), peer_locality(source));
    CompressedContext ctx = context(*route, Op::kSendRecv, comm_, tag, 0);
    compressed_recv(ctx, data, n, source);
    return;
  }
  OpCounters& counters = stats_.at(Op::kSendRecv);
  MPI_Status status;
  double start = MPI_Wtime();
  MPI_Recv(data, mpi_count(n, kind_), MPI_FLOAT, source, tag, comm_, &status);
  double elapsed = MPI_Wtime() - start;
  counters.seconds += elapsed;
  counters.wire_seconds += elapsed;
  int count = 0;
  MPI_Get_count(&status, MPI_FLOAT, &count);
  if (count != int(n))
    throw std::runtime_error(
        std::string("group ") + to_string(kind_) + ": recv from rank " + std::to_string(source) +
        " tag " + std::to_string(tag) + " expected " + std::to_string(n) +
        " floats, the message holds " +
        (count == MPI_UNDEFINED ? "a non-float payload" : std::to_string(count) + " floats"));
}

void Communicator::sendrecv(const float* send_data, size_t send_n, int dest, float* recv_data,
                            size_t recv_n, int source, int tag, Role role, uint64_t buffer_key) {
  check_peer(dest, "dest", "sendrecv");
  check_peer(source, "source", "sendrecv");
  WatchedCall watched("sendrecv", comm_, source);
  const uint64_t bytes = uint64_t(send_n) * sizeof(float);
  const Route* out_route = compressing_route(Op::kSendRecv, role, bytes, peer_locality(dest));
  const Route* in_route =
      compressing_route(Op::kSendRecv, role, recv_n * sizeof(float), peer_locality(source));
  if ((out_route || in_route) && !(dest == rank_ && source == rank_)) {
    // Either direction may be compressed on its own, as its peer decides the
    // same for the same size: start the send, receive, then finish the send.
    Request out = isend(send_data, send_n, dest, tag, role, buffer_key);
    recv(recv_data, recv_n, source, tag, role);
    wait(out);
    return;
  }
  AdaptiveCall adaptive(adaptive_.get(),
                        find_route(Op::kSendRecv, role, bytes, peer_locality(dest)), Op::kSendRecv,
                        role, peer_locality(dest), stats_.at(Op::kSendRecv), send_data, send_n,
                        dest == rank_ ? 0 : recv_n * sizeof(float));
  PlainCall call(stats_.at(Op::kSendRecv), dest == rank_ ? 0 : bytes, peer_locality(dest));
  MPI_Sendrecv(send_data, mpi_count(send_n, kind_), MPI_FLOAT, dest, tag, recv_data,
               mpi_count(recv_n, kind_), MPI_FLOAT, source, tag, comm_, MPI_STATUS_IGNORE);
}

Communicator::Request Communicator::isend(const float* data, size_t n, int dest, int tag, Role role,
                                          uint64_t buffer_key) {
  check_peer(dest, "dest", "isend");
  WatchedCall watched("isend", comm_, dest);
  const uint64_t bytes = uint64_t(n) * sizeof(float);
  OpCounters& counters = stats_.at(Op::kSendRecv);
  Request request;
  const Route* found = find_route(Op::kSendRecv, role, bytes, peer_locality(dest));
  AdaptiveCall adaptive(adaptive_.get(), found, Op::kSendRecv, role, peer_locality(dest), counters,
                        data, n, 0, /*blocking=*/false);
  if (const Route* route = compressing(found)) {
    CompressedCall call(counters, peer_locality(dest));
    begin_compressed(*route, Op::kSendRecv, bytes, data, n);
    auto pending = std::make_unique<CompressedSendPending>();
    pending->dest = dest;
    pending->ctx = context(*route, Op::kSendRecv, comm_, tag, buffer_key);
    // The same transfer compressed_send makes, so that recv can take it.
    check_context(pending->ctx, Op::kSendRecv);
    if (dest == rank_)
      throw std::invalid_argument(describe_call(pending->ctx, Op::kSendRecv) + ": rank " +
                                  std::to_string(rank_) + " cannot send to itself");
    OutgoingTransfer& out =
        pending->out.emplace(pending->ctx, dest, make_shape(pending->ctx, Op::kSendRecv, n, rank_));
    for (size_t k = 0; k < out.shape().chunk_count(); ++k) {
      uint64_t key = feedback_key(buffer_key, FeedbackSite::kSend, uint64_t(dest), k);
      out.send_chunk(k, data + out.shape().chunk_offset(k), &key);
    }
    request.op_ = std::move(pending);
    return request;
  }
  PlainCall call(counters, bytes, peer_locality(dest));
  auto pending = std::make_unique<PlainPending>();
  pending->counters = &counters;
  pending->peer = dest;
  MPI_Isend(data, mpi_count(n, kind_), MPI_FLOAT, dest, tag, comm_, &pending->request);
  request.op_ = std::move(pending);
  return request;
}

Communicator::Request Communicator::irecv(float* data, size_t n, int source, int tag, Role role) {
  check_peer(source, "source", "irecv");
  WatchedCall watched("irecv", comm_, source);
  OpCounters& counters = stats_.at(Op::kSendRecv);
  Request request;
  const Route* found = find_route(Op::kSendRecv, role, n * sizeof(float), peer_locality(source));
  AdaptiveCall adaptive(adaptive_.get(), found, Op::kSendRecv, role, peer_locality(source),
                        counters, nullptr, 0, 0, /*blocking=*/false);
  if (const Route* route = compressing(found)) {
    auto pending = std::make_unique<CompressedRecvPending>();
    pending->source = source;
    pending->ctx = context(*route, Op::kSendRecv, comm_, tag, 0);
    check_context(pending->ctx, Op::kSendRecv);
    pending->in.emplace(pending->ctx, source, make_shape(pending->ctx, Op::kSendRecv, n, source));
    pending->data = data;
    request.op_ = std::move(pending);
    return request;
  }
  auto pending = std::make_unique<PlainPending>();
  pending->is_recv = true;
  pending->expected = n;
  pending->peer = source;
  pending->tag = tag;
  pending->group = kind_;
  pending->counters = &counters;
  double start = MPI_Wtime();
  MPI_Irecv(data, mpi_count(n, kind_), MPI_FLOAT, source, tag, comm_, &pending->request);
  counters.seconds += MPI_Wtime() - start;
  request.op_ = std::move(pending);
  return request;
}

void Communicator::wait(Request& request) {
  if (!request.op_) return;
  WatchedCall watched("wait", comm_, request.op_->waits_for());
  auto op = std::move(request.op_);
  try {
    op->finish();
  } catch (...) {
    op->abandon();
    throw;
  }
}

void Communicator::barrier() {
  WatchedCall watched("barrier", comm_);
  MPI_Barrier(comm_);
}

}  // namespace cmpi::comm
