// The Communicator's calls on 16-bit words (bf16 or fp16 bit patterns).
//
// Routing: the policy is asked about the words' real bytes (2 per element)
// and their word type (a rule may match only 16-bit words, or only float32:
// `match: {word: ...}`), and the route's codec decides how they travel:
//   raw      no codec, identity, or the cast to the buffer's own type: the
//            words go through MPI as MPI_UINT16_T. Sums (allreduce,
//            reduce-scatter) use an MPI operation that widens both operands
//            to float, adds and rounds to nearest-even once per reduction
//            step, as NCCL reduces 16-bit buffers. It is declared
//            non-commutative, so MPI combines the ranks' buffers in rank
//            order and every rank gets the same bits. With two ranks this is
//            a + b rounded once: bit for bit what widening both buffers to
//            float, summing in float and rounding the sum gives.
//   paired   mpc (lossless, on bit patterns) for sends and all-gathers: two
//            words per 32-bit MPC word (WordStaging, comm/word_staging.h);
//            the round trip is bit-exact. No error feedback (nothing is lost,
//            and adding a zero residual would turn a -0.0 pair into +0.0).
//   widened  every other codec, and mpc on sums: the buffer is cut into
//            pieces of kChunksPerPiece chunks per rank, each widened to float
//            (exact) in a scratch buffer of that size, run through the float
//            algorithm of comm/algorithms/ (pipelined chunk by chunk as
//            ever), decoded and rounded back to the 16-bit type once. Each
//            piece has its own tag and error-feedback key.
//   refused  block_sparse, whose algorithm sums sparse float blocks in place:
//            std::invalid_argument naming group, operation, role, the codec
//            and the rule.
// Stats count raw bytes at 2 per element, so a ratio is against the 16-bit
// bytes. Error samples (compression.error_sample_rate) are taken on the
// widened first piece or chunk of allreduces, all-gathers and sends (not of
// reduce-scatters, whose own block is not contiguous); paired routes are
// lossless and take none. Preset auto records 16-bit calls but does not
// probe candidates on them (its probes measure float data).
#include <mpi.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/adaptive_call.h"
#include "comm/algorithms/chunk_transfer.h"
#include "comm/algorithms/codec_steps.h"
#include "comm/call_accounting.h"
#include "comm/communicator.h"
#include "comm/communicator_pending.h"
#include "comm/watchdog.h"
#include "comm/word_staging.h"

namespace cmpi::comm {
namespace {

using compress::CodecId;

// Chunks per rank in one widened piece: enough to keep the chunk pipeline
// busy, few enough that the scratch stays small next to the buffer.
constexpr size_t kChunksPerPiece = 4;
constexpr uint64_t kWordBytes = 2;

void sum_bf16(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i)
    b[i] = compress::bf16_from_float(compress::float_from_bf16(a[i]) +
                                     compress::float_from_bf16(b[i]));
}

void sum_fp16(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i)
    b[i] = compress::fp16_from_float(compress::float_from_fp16(a[i]) +
                                     compress::float_from_fp16(b[i]));
}

// The 16-bit sum as an MPI operation for one call.
class WordSum {
 public:
  explicit WordSum(WordType type) {
    MPI_Op_create(type == WordType::kBFloat16 ? &sum_bf16 : &sum_fp16, /*commute=*/0, &op_);
  }
  ~WordSum() { MPI_Op_free(&op_); }
  WordSum(const WordSum&) = delete;
  WordSum& operator=(const WordSum&) = delete;
  MPI_Op op() const { return op_; }

 private:
  MPI_Op op_ = MPI_OP_NULL;
};

size_t total_of(const std::vector<size_t>& counts) {
  return std::accumulate(counts.begin(), counts.end(), size_t(0));
}

// Word offset of each rank's block.
std::vector<size_t> offsets_of(const std::vector<size_t>& counts) {
  std::vector<size_t> offsets(counts.size(), 0);
  for (size_t r = 1; r < counts.size(); ++r) offsets[r] = offsets[r - 1] + counts[r - 1];
  return offsets;
}

// The error-feedback key of piece `piece` of a buffer.
uint64_t piece_key(uint64_t buffer_key, size_t piece) {
  return feedback_key(buffer_key, FeedbackSite::kWordPiece, 0, piece);
}

}  // namespace

struct Communicator::Words16 {
  enum class Carriage { kRaw, kPaired, kWidened };
  struct Path {
    const Route* found = nullptr;  // what the policy said (for preset auto)
    const Route* route = nullptr;  // the compressing route; nullptr when raw
    Carriage carriage = Carriage::kRaw;
    WordStaging staging;
  };

  static void require_16_bit(const Communicator& c, WordType type, const char* operation) {
    if (!compress::is_16_bit(type))
      throw std::invalid_argument(std::string("group ") + to_string(c.kind_) + ": " + operation +
                                  " on 16-bit words was given word type " +
                                  compress::word_type_name(type) +
                                  "; float32 buffers take the float overloads");
  }

  static Path path(const Communicator& c, Op op, Role role, size_t words, WordType type,
                   Locality locality) {
    Path p;
    p.found = c.find_route(op, role, words * kWordBytes, locality, type);
    p.staging.type = type;
    const Route* route = compressing(p.found);
    if (route == nullptr) return p;
    const CodecId id = route->codec->id();
    const bool same_cast = (id == CodecId::kBf16 && type == WordType::kBFloat16) ||
                           (id == CodecId::kFp16 && type == WordType::kFloat16);
    if (id == CodecId::kIdentity || same_cast) return p;
    if (id == CodecId::kBlockSparse)
      throw std::invalid_argument(
          std::string("group ") + to_string(c.kind_) + ": " + to_string(op) + " of " +
          compress::word_type_name(type) + " words (role " + to_string(role) + "): codec " +
          compress::codec_id_name(id) + " (" + route->origin +
          ") has no 16-bit path; give this traffic another codec, or train in fp32");
    p.route = route;
    const bool sums = op == Op::kAllreduce || op == Op::kReduceScatter;
    p.carriage = id == CodecId::kMpc && !sums ? Carriage::kPaired : Carriage::kWidened;
    p.staging.paired = p.carriage == Carriage::kPaired;
    return p;
  }

  static CompressedContext context(Communicator& c, const Path& p, Op op, MPI_Comm comm, int tag,
                                   uint64_t buffer_key) {
    CompressedContext ctx = c.context(*p.route, op, comm, tag, buffer_key);
    if (p.staging.paired) ctx.feedback = nullptr;
    return ctx;
  }

  // Elements per rank in one piece of a collective.
  static size_t piece_elems(const Path& p) { return kChunksPerPiece * p.route->chunk_elems; }

  // ------------------------------------------------------------ collectives

  static void allreduce(Communicator& c, uint16_t* data, size_t n, WordType type, Role role,
                        uint64_t buffer_key) {
    require_16_bit(c, type, "allreduce");
    WatchedCall watched("allreduce", c.comm_);
    const uint64_t bytes = ring_allreduce_bytes(n, c.rank_, c.size_, kWordBytes);
    const Locality locality = c.collective_locality();
    OpCounters& counters = c.stats_.at(Op::kAllreduce);
    const Path p = path(c, Op::kAllreduce, role, n, type, locality);
    AdaptiveCall adaptive(c.adaptive_.get(), p.found, Op::kAllreduce, role, locality, counters,
                          nullptr, 0);
    if (p.route == nullptr) {
      PlainCall call(counters, bytes, locality);
      WordSum sum(type);
      MPI_Allreduce(MPI_IN_PLACE, data, mpi_count(n, c.kind_), MPI_UINT16_T, sum.op(), c.comm_);
      return;
    }
    CompressedCall call(counters, locality);
    const size_t piece = piece_elems(p) * size_t(c.size_);
    std::vector<float> scratch(std::min(n, piece));
    for (size_t offset = 0, k = 0; offset < n; offset += piece, ++k) {
      const size_t m = std::min(piece, n - offset);
      p.staging.stage(data + offset, m, 0, m, scratch.data());
      if (k == 0) c.begin_compressed(*p.route, Op::kAllreduce, bytes, scratch.data(), m);
      CompressedContext ctx =
          context(c, p, Op::kAllreduce, c.internal_, c.next_tag(), piece_key(buffer_key, k));
      ring_allreduce(ctx, scratch.data(), m);
      p.staging.unstage(scratch.data(), 0, m, data + offset, m);
    }
    if (n == 0) c.begin_compressed(*p.route, Op::kAllreduce, bytes, nullptr, 0);
  }

  static void reduce_scatter(Communicator& c, const uint16_t* in, uint16_t* out,
                             const std::vector<size_t>& counts, WordType type, Role role,
                             uint64_t buffer_key) {
    require_16_bit(c, type, "reduce_scatter");
    c.check_counts(counts, "reduce_scatter");
    WatchedCall watched("reduce_scatter", c.comm_);
    const size_t total = total_of(counts);
    const uint64_t bytes = uint64_t(total - counts[c.rank_]) * kWordBytes;
    const Locality locality = c.collective_locality();
    OpCounters& counters = c.stats_.at(Op::kReduceScatter);
    const Path p = path(c, Op::kReduceScatter, role, total, type, locality);
    AdaptiveCall adaptive(c.adaptive_.get(), p.found, Op::kReduceScatter, role, locality, counters,
                          nullptr, 0);
    if (p.route == nullptr) {
      PlainCall call(counters, bytes, locality);
      WordSum sum(type);
      MPI_Reduce_scatter(in, out, c.mpi_counts(counts, c.recv_counts_).data(), MPI_UINT16_T,
                         sum.op(), c.comm_);
      return;
    }
    CompressedCall call(counters, locality);
    c.begin_compressed(*p.route, Op::kReduceScatter, bytes, nullptr, 0);
    const size_t piece = piece_elems(p);
    const std::vector<size_t> offsets = offsets_of(counts);
    const size_t longest = *std::max_element(counts.begin(), counts.end());
    std::vector<size_t> piece_counts(counts.size());
    std::vector<float> in_scratch, out_scratch;
    for (size_t first = 0, k = 0; first < longest; first += piece, ++k) {
      for (size_t r = 0; r < counts.size(); ++r)
        piece_counts[r] = counts[r] > first ? std::min(piece, counts[r] - first) : 0;
      in_scratch.resize(total_of(piece_counts));
      out_scratch.resize(piece_counts[size_t(c.rank_)]);
      for (size_t r = 0, at = 0; r < counts.size(); at += piece_counts[r], ++r)
        p.staging.stage(in + offsets[r], counts[r], first, piece_counts[r], in_scratch.data() + at);
      CompressedContext ctx =
          context(c, p, Op::kReduceScatter, c.internal_, c.next_tag(), piece_key(buffer_key, k));
      ring_reduce_scatter(ctx, in_scratch.data(), out_scratch.data(), piece_counts);
      p.staging.unstage(out_scratch.data(), first, out_scratch.size(), out, counts[c.rank_]);
    }
  }

  static void allgather(Communicator& c, const uint16_t* in, uint16_t* out,
                        const std::vector<size_t>& counts, WordType type, Role role,
                        uint64_t buffer_key) {
    require_16_bit(c, type, "allgather");
    c.check_counts(counts, "allgather");
    WatchedCall watched("allgather", c.comm_);
    const size_t total = total_of(counts);
    const uint64_t bytes = uint64_t(total - counts[(c.rank_ + 1) % c.size_]) * kWordBytes;
    const Locality locality = c.collective_locality();
    OpCounters& counters = c.stats_.at(Op::kAllgather);
    const Path p = path(c, Op::kAllgather, role, total, type, locality);
    AdaptiveCall adaptive(c.adaptive_.get(), p.found, Op::kAllgather, role, locality, counters,
                          nullptr, 0);
    if (p.route == nullptr) {
      PlainCall call(counters, bytes, locality);
      const auto& n = c.mpi_counts(counts, c.recv_counts_);
      const auto& displs = c.mpi_displs(n, c.recv_displs_);
      MPI_Allgatherv(in, n[c.rank_], MPI_UINT16_T, out, n.data(), displs.data(), MPI_UINT16_T,
                     c.comm_);
      return;
    }
    CompressedCall call(counters, locality);
    const size_t piece = piece_elems(p);
    const std::vector<size_t> offsets = offsets_of(counts);
    std::vector<size_t> elems(counts.size()), piece_counts(counts.size());
    for (size_t r = 0; r < counts.size(); ++r) elems[r] = p.staging.elements(counts[r]);
    const size_t longest = *std::max_element(elems.begin(), elems.end());
    const size_t own = size_t(c.rank_);
    std::vector<float> in_scratch, out_scratch;
    bool begun = false;
    for (size_t first = 0, k = 0; first < longest; first += piece, ++k) {
      for (size_t r = 0; r < counts.size(); ++r)
        piece_counts[r] = elems[r] > first ? std::min(piece, elems[r] - first) : 0;
      in_scratch.resize(piece_counts[own]);
      out_scratch.resize(total_of(piece_counts));
      p.staging.stage(in, counts[own], first, piece_counts[own], in_scratch.data());
      if (!begun) {
        c.begin_compressed(*p.route, Op::kAllgather, bytes,
                           p.staging.paired ? nullptr : in_scratch.data(), in_scratch.size());
        begun = true;
      }
      CompressedContext ctx =
          context(c, p, Op::kAllgather, c.internal_, c.next_tag(), piece_key(buffer_key, k));
      ring_allgather(ctx, in_scratch.data(), out_scratch.data(), piece_counts);
      for (size_t r = 0, at = 0; r < counts.size(); at += piece_counts[r], ++r)
        p.staging.unstage(out_scratch.data() + at, first, piece_counts[r], out + offsets[r],
                          counts[r]);
    }
    if (!begun) c.begin_compressed(*p.route, Op::kAllgather, bytes, nullptr, 0);
  }

  // ------------------------------------------------------------ point to point

  // Stages and encodes every chunk of data into `out` (an OutgoingTransfer
  // encodes a chunk before send_chunk returns, so one chunk of scratch
  // serves them all).
  static void send_chunks(Communicator& c, const Path& p, OutgoingTransfer& out,
                          const uint16_t* data, size_t n, int dest, uint64_t buffer_key,
                          uint64_t bytes) {
    std::vector<float> scratch(std::min(out.shape().total_elems, out.shape().chunk_elems));
    for (size_t k = 0; k < out.shape().chunk_count(); ++k) {
      const size_t length = out.shape().chunk_length(k);
      p.staging.stage(data, n, out.shape().chunk_offset(k), length, scratch.data());
      if (k == 0)
        c.begin_compressed(*p.route, Op::kSendRecv, bytes,
                           p.staging.paired ? nullptr : scratch.data(), length);
      uint64_t key = feedback_key(buffer_key, FeedbackSite::kSend, uint64_t(dest), k);
      out.send_chunk(k, scratch.data(), p.staging.paired ? nullptr : &key);
    }
  }

  // Decodes chunk k of `in` through scratch into the words.
  static void receive_chunk(const WordStaging& staging, IncomingTransfer& in, size_t k,
                            std::vector<float>& scratch, uint16_t* data, size_t n) {
    const size_t length = in.shape().chunk_length(k);
    scratch.resize(std::max(scratch.size(), length));
    in.decode(k, scratch.data());
    staging.unstage(scratch.data(), in.shape().chunk_offset(k), length, data, n);
  }

  // What wait() does, inside the blocking call's own watched scope.
  static void finish_now(Request& request) {
    auto op = std::move(request.op_);
    try {
      op->finish();
    } catch (...) {
      op->abandon();
      throw;
    }
  }

  static void check_not_self(const Communicator& c, int peer, const char* operation) {
    if (peer == c.rank_)
      throw std::invalid_argument(std::string("group ") + to_string(c.kind_) + ": compressed " +
                                  operation + " on rank " + std::to_string(c.rank_) +
                                  " to or from itself");
  }

  static Request isend(Communicator& c, const uint16_t* data, size_t n, WordType type, int dest,
                       int tag, Role role, uint64_t buffer_key, bool blocking) {
    require_16_bit(c, type, blocking ? "send" : "isend");
    c.check_peer(dest, "dest", blocking ? "send" : "isend");
    WatchedCall watched(blocking ? "send" : "isend", c.comm_, dest);
    const uint64_t bytes = uint64_t(n) * kWordBytes;
    const Locality locality = c.peer_locality(dest);
    OpCounters& counters = c.stats_.at(Op::kSendRecv);
    const Path p = path(c, Op::kSendRecv, role, n, type, locality);
    AdaptiveCall adaptive(c.adaptive_.get(), p.found, Op::kSendRecv, role, locality, counters,
                          nullptr, 0, 0, blocking);
    Request request;
    if (p.route == nullptr) {
      PlainCall call(counters, bytes, locality);
      if (blocking) {
        MPI_Send(data, mpi_count(n, c.kind_), MPI_UINT16_T, dest, tag, c.comm_);
        return request;
      }
      auto pending = std::make_unique<PlainPending>();
      pending->counters = &counters;
      pending->peer = dest;
      MPI_Isend(data, mpi_count(n, c.kind_), MPI_UINT16_T, dest, tag, c.comm_, &pending->request);
      request.op_ = std::move(pending);
      return request;
    }
    check_not_self(c, dest, "send");
    {
      // The encoding is this call's time; the wait adds its own (finish()).
      CompressedCall call(counters, locality);
      auto pending = std::make_unique<CompressedSendPending>();
      pending->dest = dest;
      pending->ctx = context(c, p, Op::kSendRecv, c.comm_, tag, buffer_key);
      check_context(pending->ctx, Op::kSendRecv);
      OutgoingTransfer& out = pending->out.emplace(
          pending->ctx, dest,
          make_shape(pending->ctx, Op::kSendRecv, p.staging.elements(n), c.rank_));
      send_chunks(c, p, out, data, n, dest, buffer_key, bytes);
      request.op_ = std::move(pending);
    }
    if (blocking) finish_now(request);
    return request;
  }

  static Request irecv(Communicator& c, uint16_t* data, size_t n, WordType type, int source,
                       int tag, Role role, bool blocking) {
    const char* operation = blocking ? "recv" : "irecv";
    require_16_bit(c, type, operation);
    c.check_peer(source, "source", operation);
    WatchedCall watched(operation, c.comm_, source);
    const Locality locality = c.peer_locality(source);
    OpCounters& counters = c.stats_.at(Op::kSendRecv);
    const Path p = path(c, Op::kSendRecv, role, n, type, locality);
    AdaptiveCall adaptive(c.adaptive_.get(), p.found, Op::kSendRecv, role, locality, counters,
                          nullptr, 0, blocking ? n * kWordBytes : 0, blocking);
    Request request;
    if (p.route == nullptr) {
      // Received bytes are counted by the sender; only time is added here.
      auto pending = std::make_unique<PlainPending>();
      pending->is_recv = true;
      pending->expected = n;
      pending->peer = source;
      pending->tag = tag;
      pending->group = c.kind_;
      pending->counters = &counters;
      pending->datatype = MPI_UINT16_T;
      pending->elements = "16-bit words";
      MPI_Irecv(data, mpi_count(n, c.kind_), MPI_UINT16_T, source, tag, c.comm_, &pending->request);
      request.op_ = std::move(pending);
    } else {
      check_not_self(c, source, "recv");
      auto pending = std::make_unique<CompressedRecvPending>();
      pending->source = source;
      pending->ctx = context(c, p, Op::kSendRecv, c.comm_, tag, 0);
      check_context(pending->ctx, Op::kSendRecv);
      pending->in.emplace(pending->ctx, source,
                          make_shape(pending->ctx, Op::kSendRecv, p.staging.elements(n), source));
      auto scratch = std::make_shared<std::vector<float>>();
      const WordStaging staging = p.staging;
      pending->deliver = [staging, scratch, data, n](IncomingTransfer& in, size_t k) {
        receive_chunk(staging, in, k, *scratch, data, n);
      };
      request.op_ = std::move(pending);
    }
    if (blocking) finish_now(request);
    return request;
  }
};

void Communicator::allreduce(uint16_t* data, size_t n, WordType type, Role role,
                             uint64_t buffer_key) {
  Words16::allreduce(*this, data, n, type, role, buffer_key);
}

void Communicator::reduce_scatter(const uint16_t* in, uint16_t* out,
                                  const std::vector<size_t>& counts, WordType type, Role role,
                                  uint64_t buffer_key) {
  Words16::reduce_scatter(*this, in, out, counts, type, role, buffer_key);
}

void Communicator::allgather(const uint16_t* in, uint16_t* out, const std::vector<size_t>& counts,
                             WordType type, Role role, uint64_t buffer_key) {
  Words16::allgather(*this, in, out, counts, type, role, buffer_key);
}

void Communicator::send(const uint16_t* data, size_t n, WordType type, int dest, int tag, Role role,
                        uint64_t buffer_key) {
  Words16::isend(*this, data, n, type, dest, tag, role, buffer_key, /*blocking=*/true);
}

void Communicator::recv(uint16_t* data, size_t n, WordType type, int source, int tag, Role role) {
  Words16::irecv(*this, data, n, type, source, tag, role, /*blocking=*/true);
}

Communicator::Request Communicator::isend(const uint16_t* data, size_t n, WordType type, int dest,
                                          int tag, Role role, uint64_t buffer_key) {
  return Words16::isend(*this, data, n, type, dest, tag, role, buffer_key, /*blocking=*/false);
}

Communicator::Request Communicator::irecv(uint16_t* data, size_t n, WordType type, int source,
                                          int tag, Role role) {
  return Words16::irecv(*this, data, n, type, source, tag, role, /*blocking=*/false);
}

}  // namespace cmpi::comm
