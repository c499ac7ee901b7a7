// The Communicator's carriage of 16-bit words (bf16 or fp16 bit patterns)
// through a compressing route; the dispatch (communicator_dispatch.h) has
// already watched the call, routed it and opened its accounting.
//
// Routing: the policy is asked about the words' real bytes (2 per element)
// and their word type (a rule may match only 16-bit words, or only float32:
// `match: {word: ...}`), and the route's codec decides how they travel:
//   raw      no codec, identity, or the cast to the buffer's own type: the
//            plain path moves the words through MPI as MPI_UINT16_T
//            (communicator.cpp). Sums (allreduce, reduce-scatter) use
//            ElementSum (comm/element_type.h), rounding once per reduction
//            step in rank order. With two ranks this is a + b rounded once:
//            bit for bit what widening both buffers to float, summing in
//            float and rounding the sum gives.
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

#include "comm/algorithms/chunk_transfer.h"
#include "comm/algorithms/codec_steps.h"
#include "comm/call_accounting.h"
#include "comm/communicator_pending.h"
#include "comm/communicator_words16.h"

namespace cmpi::comm {
namespace {

using compress::CodecId;

// Chunks per rank in one widened piece: enough to keep the chunk pipeline
// busy, few enough that the scratch stays small next to the buffer.
constexpr size_t kChunksPerPiece = 4;

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

Communicator::Words16::Path Communicator::Words16::path(const Communicator& c, const Route* found,
                                                        const CallSpec& call) {
  const WordType type = call.buffers.element.word;
  Path p;
  p.staging.type = type;
  const Route* route = compressing(found);
  if (route == nullptr) return p;
  const CodecId id = route->codec->id();
  const bool same_cast = (id == CodecId::kBf16 && type == WordType::kBFloat16) ||
                         (id == CodecId::kFp16 && type == WordType::kFloat16);
  if (id == CodecId::kIdentity || same_cast) return p;
  if (id == CodecId::kBlockSparse)
    throw std::invalid_argument(
        std::string("group ") + to_string(c.kind_) + ": " + to_string(call.op) + " of " +
        compress::word_type_name(type) + " words (role " + to_string(call.role) + "): codec " +
        compress::codec_id_name(id) + " (" + route->origin +
        ") has no 16-bit path; give this traffic another codec, or train in fp32");
  p.route = route;
  const bool sums = call.op == Op::kAllreduce || call.op == Op::kReduceScatter;
  p.carriage = id == CodecId::kMpc && !sums ? Carriage::kPaired : Carriage::kWidened;
  p.staging.paired = p.carriage == Carriage::kPaired;
  return p;
}

CompressedContext Communicator::Words16::context(Communicator& c, const Path& p, Op op,
                                                 MPI_Comm comm, int tag, uint64_t buffer_key) {
  CompressedContext ctx = c.context(*p.route, op, comm, tag, buffer_key);
  if (p.staging.paired) ctx.feedback = nullptr;
  return ctx;
}

// Elements per rank in one piece of a collective.
size_t Communicator::Words16::piece_elems(const Path& p) {
  return kChunksPerPiece * p.route->chunk_elems;
}

// ------------------------------------------------------------ collectives

void Communicator::Words16::allreduce(Communicator& c, const Path& p, CallRecord& record,
                                      uint16_t* data, size_t n, uint64_t buffer_key) {
  record.compressed();
  const size_t piece = piece_elems(p) * size_t(c.size_);
  std::vector<float> scratch(std::min(n, piece));
  for (size_t offset = 0, k = 0; offset < n; offset += piece, ++k) {
    const size_t m = std::min(piece, n - offset);
    p.staging.stage(data + offset, m, 0, m, scratch.data());
    if (k == 0) c.begin_compressed(*p.route, Op::kAllreduce, record.raw_bytes(), scratch.data(), m);
    CompressedContext ctx =
        context(c, p, Op::kAllreduce, c.internal_, c.next_tag(), piece_key(buffer_key, k));
    ring_allreduce(ctx, scratch.data(), m);
    p.staging.unstage(scratch.data(), 0, m, data + offset, m);
  }
  if (n == 0) c.begin_compressed(*p.route, Op::kAllreduce, record.raw_bytes(), nullptr, 0);
}

void Communicator::Words16::reduce_scatter(Communicator& c, const Path& p, CallRecord& record,
                                           const uint16_t* in, uint16_t* out,
                                           const std::vector<size_t>& counts, uint64_t buffer_key) {
  record.compressed();
  c.begin_compressed(*p.route, Op::kReduceScatter, record.raw_bytes(), nullptr, 0);
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

void Communicator::Words16::allgather(Communicator& c, const Path& p, CallRecord& record,
                                      const uint16_t* in, uint16_t* out,
                                      const std::vector<size_t>& counts, uint64_t buffer_key) {
  record.compressed();
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
      c.begin_compressed(*p.route, Op::kAllgather, record.raw_bytes(),
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
  if (!begun) c.begin_compressed(*p.route, Op::kAllgather, record.raw_bytes(), nullptr, 0);
}

// ------------------------------------------------------------ point to point

// Stages and encodes every chunk of data into `out` (an OutgoingTransfer
// encodes a chunk before send_chunk returns, so one chunk of scratch
// serves them all).
void Communicator::Words16::send_chunks(Communicator& c, const Path& p, OutgoingTransfer& out,
                                        const uint16_t* data, size_t n, int dest,
                                        uint64_t buffer_key, uint64_t bytes) {
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
void Communicator::Words16::receive_chunk(const WordStaging& staging, IncomingTransfer& in,
                                          size_t k, std::vector<float>& scratch, uint16_t* data,
                                          size_t n) {
  const size_t length = in.shape().chunk_length(k);
  scratch.resize(std::max(scratch.size(), length));
  in.decode(k, scratch.data());
  staging.unstage(scratch.data(), in.shape().chunk_offset(k), length, data, n);
}

void Communicator::Words16::check_not_self(const Communicator& c, int peer, const char* operation) {
  if (peer == c.rank_)
    throw std::invalid_argument(std::string("group ") + to_string(c.kind_) + ": compressed " +
                                operation + " on rank " + std::to_string(c.rank_) +
                                " to or from itself");
}

Communicator::Request Communicator::Words16::isend(Communicator& c, const Path& p,
                                                   CallRecord& record, const uint16_t* data,
                                                   size_t n, int dest, int tag, uint64_t buffer_key,
                                                   bool blocking) {
  check_not_self(c, dest, "send");
  Request request;
  // The encoding is this call's time; the wait adds its own (finish()).
  record.compressed();
  auto pending = std::make_unique<CompressedSendPending>();
  pending->dest = dest;
  pending->ctx = context(c, p, Op::kSendRecv, c.comm_, tag, buffer_key);
  check_context(pending->ctx, Op::kSendRecv);
  OutgoingTransfer& out = pending->out.emplace(
      pending->ctx, dest, make_shape(pending->ctx, Op::kSendRecv, p.staging.elements(n), c.rank_));
  send_chunks(c, p, out, data, n, dest, buffer_key, record.raw_bytes());
  request.op_ = std::move(pending);
  record.close();
  if (blocking) Request::Pending::complete(std::move(request.op_));
  return request;
}

Communicator::Request Communicator::Words16::irecv(Communicator& c, const Path& p, uint16_t* data,
                                                   size_t n, int source, int tag, bool blocking) {
  check_not_self(c, source, "recv");
  Request request;
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
  if (blocking) Request::Pending::complete(std::move(request.op_));
  return request;
}

}  // namespace cmpi::comm
