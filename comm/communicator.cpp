#include "comm/communicator.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <string>

#include "comm/algorithms/codec_steps.h"
#include "comm/communicator_dispatch.h"
#include "comm/communicator_pending.h"
#include "comm/communicator_words16.h"
#include "comm/device/device_collectives.h"
#include "comm/node_grouping.h"
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

// ------------------------------------------------------------ the one form

BufferKind Communicator::words16(WordType type, const char* operation) const {
  if (!compress::is_16_bit(type))
    throw std::invalid_argument(std::string("group ") + to_string(kind_) + ": " + operation +
                                " on 16-bit words was given word type " +
                                compress::word_type_name(type) +
                                "; float32 buffers take the float overloads");
  return BufferKind{ElementType{type}, MemoryKind::kHost};
}

CallSpec Communicator::call_spec(const char* host_name, const char* device_name, Op op, Role role,
                                 BufferKind buffers) const {
  CallSpec call;
  call.buffers = buffers;
  call.operation = buffers.memory == MemoryKind::kDevice ? device_name : host_name;
  call.op = op;
  call.role = role;
  call.locality = collective_locality();
  return call;
}

void Communicator::check_buffers(const CallSpec& call, bool words_ok, bool device_ok) const {
  const std::string at = std::string("group ") + to_string(kind_) + ": " + call.operation;
  if (!call.buffers.element.is_float32() && (!words_ok || call.on_device()))
    throw std::invalid_argument(at + " of " + compress::word_type_name(call.buffers.element.word) +
                                " words on " + to_string(call.buffers.memory) +
                                " memory: no transport of this group carries them");
  if (call.on_device() && !device_ok)
    throw std::invalid_argument(at +
                                " on device memory: the device transport takes the blocking "
                                "collectives, send and recv");
  if (call.on_device() && !has_device())
    throw std::logic_error(at +
                           " on device memory, but no device is attached to this group "
                           "(Communicator::attach_device)");
}

namespace {

std::vector<uint64_t> as_u64(const std::vector<size_t>& counts) {
  return std::vector<uint64_t>(counts.begin(), counts.end());
}

}  // namespace

// ------------------------------------------------------------ collectives

void Communicator::allreduce(void* data, size_t n, BufferKind buffers, Role role,
                             uint64_t buffer_key) {
  CallSpec call = call_spec("allreduce", "device allreduce", Op::kAllreduce, role, buffers);
  check_buffers(call, /*words_ok=*/true, /*device_ok=*/true);
  const size_t word = buffers.element.bytes();
  call.policy_bytes = n * word;
  call.raw_bytes = ring_allreduce_bytes(n, rank_, size_, word);
  call.sample(data, n);
  dispatch(call, [&](const Route* found, CallRecord& record) {
    if (call.on_device())
      return on_device(call, found, record, -1, false,
                       [&](device::DeviceCollectives& c, compress::cuda::StreamId s) {
                         c.allreduce(static_cast<float*>(data), n, s);
                       });
    if (!buffers.element.is_float32()) {
      const Words16::Path p = Words16::path(*this, found, call);
      if (p.route != nullptr)
        return Words16::allreduce(*this, p, record, static_cast<uint16_t*>(data), n, buffer_key);
    } else if (const Route* route = compressing(found)) {
      return compressed_float_allreduce(*route, static_cast<float*>(data), n, role, buffer_key,
                                        record);
    }
    plain_allreduce(data, n, buffers.element, buffer_key, record);
  });
}

void Communicator::compressed_float_allreduce(const Route& first, float* data, size_t n, Role role,
                                              uint64_t buffer_key, CallRecord& record) {
  const Route* route = &first;
  while (route != nullptr && route->codec->id() == compress::CodecId::kBlockSparse) {
    // Too dense for the block-sparse path to pay: the route the next
    // matching rule gives (all ranks agree: they decided on the same sum).
    const Route* fallback =
        compressing_route_after(*route, Op::kAllreduce, role, n * sizeof(float), record.locality());
    if (block_sparse_allreduce_if_cheaper(*route, fallback, data, n, record.raw_bytes(),
                                          buffer_key))
      return;
    route = fallback;
  }
  if (route == nullptr) return plain_allreduce(data, n, ElementType{}, buffer_key, record);
  if (sparsified_block_sparse_pays(*route, data, n))
    return sparsified_block_sparse_allreduce(*route, data, n, record.raw_bytes(), buffer_key);
  record.compressed();
  begin_compressed(*route, Op::kAllreduce, record.raw_bytes(), data, n);
  CompressedContext ctx = context(*route, Op::kAllreduce, internal_, next_tag(), buffer_key);
  ring_allreduce(ctx, data, n);
}

void Communicator::plain_allreduce(void* data, size_t n, ElementType element, uint64_t buffer_key,
                                   CallRecord& record) {
  if (element.is_float32() && takes_plain_ring(n)) {
    // Raw, but on the pipelined ring rather than MPI's own choice of
    // algorithm (see PolicyConfig::plain_ring_min_bytes); counted as a plain
    // call whose wire bytes include the ring's framing.
    record.compressed();
    record.counters().calls += 1;
    record.counters().raw_bytes += record.raw_bytes();
    raw_allreduce(static_cast<float*>(data), n, buffer_key, record.counters());
    return;
  }
  record.plain();
  const ElementSum sum(element);
  MPI_Allreduce(MPI_IN_PLACE, data, mpi_count(n, kind_), element.mpi_type(), sum.op(), comm_);
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

void Communicator::reduce_scatter(const void* in, void* out, const std::vector<size_t>& counts,
                                  BufferKind buffers, Role role, uint64_t buffer_key) {
  CallSpec call =
      call_spec("reduce_scatter", "device reduce_scatter", Op::kReduceScatter, role, buffers);
  check_counts(counts, call.operation);
  check_buffers(call, /*words_ok=*/true, /*device_ok=*/true);
  const size_t total = total_of(counts), word = buffers.element.bytes();
  call.policy_bytes = total * word;
  call.raw_bytes = uint64_t(total - counts[size_t(rank_)]) * word;
  call.sample(in, total);
  dispatch(call, [&](const Route* found, CallRecord& record) {
    if (call.on_device())
      return on_device(call, found, record, -1, false,
                       [&](device::DeviceCollectives& c, compress::cuda::StreamId s) {
                         c.reduce_scatter(static_cast<const float*>(in), static_cast<float*>(out),
                                          as_u64(counts), s);
                       });
    if (!buffers.element.is_float32()) {
      const Words16::Path p = Words16::path(*this, found, call);
      if (p.route != nullptr)
        return Words16::reduce_scatter(*this, p, record, static_cast<const uint16_t*>(in),
                                       static_cast<uint16_t*>(out), counts, buffer_key);
    } else if (const Route* route = compressing(found)) {
      record.compressed();
      begin_compressed(*route, Op::kReduceScatter, record.raw_bytes(),
                       static_cast<const float*>(in), total);
      CompressedContext ctx =
          context(*route, Op::kReduceScatter, internal_, next_tag(), buffer_key);
      return ring_reduce_scatter(ctx, static_cast<const float*>(in), static_cast<float*>(out),
                                 counts);
    }
    record.plain();
    const ElementSum sum(buffers.element);
    MPI_Reduce_scatter(in, out, mpi_counts(counts, recv_counts_).data(), buffers.element.mpi_type(),
                       sum.op(), comm_);
  });
}

void Communicator::allgather(const void* in, void* out, const std::vector<size_t>& counts,
                             BufferKind buffers, Role role, uint64_t buffer_key) {
  CallSpec call = call_spec("allgather", "device allgather", Op::kAllgather, role, buffers);
  check_counts(counts, call.operation);
  check_buffers(call, /*words_ok=*/true, /*device_ok=*/true);
  const size_t total = total_of(counts), word = buffers.element.bytes();
  call.policy_bytes = total * word;
  call.raw_bytes = uint64_t(total - counts[size_t((rank_ + 1) % size_)]) * word;
  call.sample(in, counts[size_t(rank_)]);
  dispatch(call, [&](const Route* found, CallRecord& record) {
    if (call.on_device())
      return on_device(call, found, record, -1, false,
                       [&](device::DeviceCollectives& c, compress::cuda::StreamId s) {
                         c.allgather(static_cast<const float*>(in), static_cast<float*>(out),
                                     as_u64(counts), s);
                       });
    if (!buffers.element.is_float32()) {
      const Words16::Path p = Words16::path(*this, found, call);
      if (p.route != nullptr)
        return Words16::allgather(*this, p, record, static_cast<const uint16_t*>(in),
                                  static_cast<uint16_t*>(out), counts, buffer_key);
    } else if (const Route* route = compressing(found)) {
      record.compressed();
      begin_compressed(*route, Op::kAllgather, record.raw_bytes(), static_cast<const float*>(in),
                       counts[size_t(rank_)]);
      CompressedContext ctx = context(*route, Op::kAllgather, internal_, next_tag(), buffer_key);
      return ring_allgather(ctx, static_cast<const float*>(in), static_cast<float*>(out), counts);
    }
    record.plain();
    const auto& c = mpi_counts(counts, recv_counts_);
    const auto& displs = mpi_displs(c, recv_displs_);
    const MPI_Datatype type = buffers.element.mpi_type();
    MPI_Allgatherv(in, c[size_t(rank_)], type, out, c.data(), displs.data(), type, comm_);
  });
}

void Communicator::broadcast(void* data, size_t n, int root, BufferKind buffers, Role role,
                             uint64_t buffer_key) {
  CallSpec call = call_spec("broadcast", "device broadcast", Op::kBroadcast, role, buffers);
  check_peer(root, "root", call.operation);
  check_buffers(call, /*words_ok=*/false, /*device_ok=*/true);
  call.policy_bytes = n * sizeof(float);
  call.raw_bytes = chain_broadcast_bytes(n, rank_, root, size_);
  call.sample(rank_ == root ? data : nullptr, n);
  auto* floats = static_cast<float*>(data);
  dispatch(call, [&](const Route* found, CallRecord& record) {
    if (call.on_device())
      return on_device(call, found, record, -1, false,
                       [&](device::DeviceCollectives& c, compress::cuda::StreamId s) {
                         c.broadcast(floats, n, root, s);
                       });
    if (const Route* route = compressing(found)) {
      record.compressed();
      begin_compressed(*route, Op::kBroadcast, record.raw_bytes(), call.own, n);
      CompressedContext ctx = context(*route, Op::kBroadcast, internal_, next_tag(), buffer_key);
      return chain_broadcast(ctx, floats, n, root);
    }
    record.plain();
    MPI_Bcast(data, mpi_count(n, kind_), MPI_FLOAT, root, comm_);
  });
}

void Communicator::alltoall(const void* in, const std::vector<size_t>& send_counts, void* out,
                            const std::vector<size_t>& recv_counts, BufferKind buffers, Role role,
                            uint64_t buffer_key) {
  CallSpec call = call_spec("alltoall", "device alltoall", Op::kAlltoall, role, buffers);
  check_counts(send_counts, call.operation);
  check_counts(recv_counts, call.operation);
  check_buffers(call, /*words_ok=*/false, /*device_ok=*/true);
  const size_t send_total = total_of(send_counts);
  call.policy_bytes = send_total * sizeof(float);
  call.agree_on_size = true;  // ranks may hold different sizes
  call.raw_bytes = uint64_t(send_total - send_counts[size_t(rank_)]) * sizeof(float);
  call.sample(in, send_total);
  const auto* from = static_cast<const float*>(in);
  auto* to = static_cast<float*>(out);
  dispatch(call, [&](const Route* found, CallRecord& record) {
    if (call.on_device())
      return on_device(call, found, record, -1, false,
                       [&](device::DeviceCollectives& c, compress::cuda::StreamId s) {
                         c.alltoall(from, as_u64(send_counts), to, as_u64(recv_counts), s);
                       });
    if (const Route* route = compressing(found)) {
      record.compressed();
      // The first block this rank actually sends elsewhere is its sample.
      size_t offset = 0, sample_n = 0;
      for (int j = 0; j < size_ && sample_n == 0; ++j) {
        if (j != rank_) sample_n = send_counts[size_t(j)];
        if (sample_n == 0) offset += send_counts[size_t(j)];
      }
      begin_compressed(*route, Op::kAlltoall, record.raw_bytes(), from + offset, sample_n);
      CompressedContext ctx = context(*route, Op::kAlltoall, internal_, next_tag(), buffer_key);
      return compressed_alltoall(ctx, from, send_counts, to, recv_counts);
    }
    record.plain();
    const auto& sc = mpi_counts(send_counts, send_counts_);
    const auto& rc = mpi_counts(recv_counts, recv_counts_);
    const auto& sd = mpi_displs(sc, send_displs_);
    const auto& rd = mpi_displs(rc, recv_displs_);
    MPI_Alltoallv(in, sc.data(), sd.data(), MPI_FLOAT, out, rc.data(), rd.data(), MPI_FLOAT, comm_);
  });
}

void Communicator::halo_exchange(const HaloBuffers& b, Role role, uint64_t buffer_key) {
  const int lo_peer = b.lower_peer(rank_), hi_peer = b.upper_peer(rank_, size_);
  if (lo_peer != HaloBuffers::kNoPeer) check_peer(lo_peer, "lo_peer", "halo_exchange");
  if (hi_peer != HaloBuffers::kNoPeer) check_peer(hi_peer, "hi_peer", "halo_exchange");
  const bool has_lo = lo_peer != HaloBuffers::kNoPeer, has_hi = hi_peer != HaloBuffers::kNoPeer;
  const size_t send_lo = has_lo ? b.send_lo_count : 0, send_hi = has_hi ? b.send_hi_count : 0;
  const size_t recv_lo = has_lo ? b.recv_lo_count : 0, recv_hi = has_hi ? b.recv_hi_count : 0;
  const size_t largest = std::max(std::max(send_lo, send_hi), std::max(recv_lo, recv_hi));
  CallSpec call = call_spec("halo_exchange", "halo_exchange", Op::kHalo, role, BufferKind{});
  call.policy_bytes = largest * sizeof(float);
  call.agree_on_size = true;  // neighbours may exchange different sizes
  call.raw_bytes = uint64_t(send_lo + send_hi) * sizeof(float);
  call.sample(send_lo ? b.send_lo : b.send_hi, send_lo ? send_lo : send_hi);
  call.received_bytes = (recv_lo + recv_hi) * sizeof(float);
  dispatch(call, [&](const Route* found, CallRecord& record) {
    if (const Route* route = compressing(found)) {
      record.compressed();
      begin_compressed(*route, Op::kHalo, record.raw_bytes(), call.own, call.own_n);
      CompressedContext ctx = context(*route, Op::kHalo, internal_, next_tag(), buffer_key);
      return comm::halo_exchange(ctx, b);
    }
    record.plain();
    plain_halo_exchange(b, has_lo ? lo_peer : MPI_PROC_NULL, has_hi ? hi_peer : MPI_PROC_NULL);
  });
}

void Communicator::plain_halo_exchange(const HaloBuffers& b, int lo, int hi) {
  const bool has_lo = lo != MPI_PROC_NULL, has_hi = hi != MPI_PROC_NULL;
  const size_t send_lo = has_lo ? b.send_lo_count : 0, send_hi = has_hi ? b.send_hi_count : 0;
  const size_t recv_lo = has_lo ? b.recv_lo_count : 0, recv_hi = has_hi ? b.recv_hi_count : 0;
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

void Communicator::barrier() {
  WatchedCall watched("barrier", comm_);
  MPI_Barrier(comm_);
}

}  // namespace cmpi::comm
