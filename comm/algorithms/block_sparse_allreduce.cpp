// Block-sparse allreduce: the peer-to-peer counterpart of OmniReduce (Fei et
// al., "Efficient Sparse Collective Communication and its application to
// Accelerate Distributed Deep Learning", SIGCOMM 2021). OmniReduce's workers
// tell a central aggregator which block each will send next, so blocks that
// are zero everywhere are skipped by all; without an aggregator, the ring
// does the same: every message carries the list of non-zero blocks it holds
// plus those blocks only, so a block that is zero on every rank never
// travels, and one that is non-zero on a few ranks travels only from the
// point in the ring where the first of them added it.
//
// Works as follows, with N ranks, blocks of B floats dealt to N segments of
// near-equal block counts (block_layout), segment j ending on rank j:
//   1. reduce-scatter round the ring, N-1 steps: at step s rank r sends
//      segment r-1-s to its right neighbour and receives segment r-2-s from
//      its left one, adds the received blocks into its own data and marks
//      them non-zero; the next step sends that segment's union of non-zero
//      blocks (received or its own), so the union grows as partial sums
//      combine;
//   2. allgather round the ring, N-1 steps: the owner of each final segment
//      sends its non-zero blocks; every other rank writes them, zeroes its
//      blocks of that segment the owner did not send (only those it knows to
//      be non-zero), and forwards the received bytes unchanged.
// Each segment is cut into chunks of ctx.chunk_elems floats (whole blocks),
// one message each, so a chunk moves on as soon as it is summed; all
// receives are posted up front in the order the left neighbour sends (steps
// in order, chunks in order within a step, same tag: MPI keeps the order),
// into buffers allocated without initialisation (pages are touched only as
// far as the sparse messages reach), and every wait goes through the call's
// Progress, which keeps all sends and receives moving.
//
// Message: u32 count k, then k u32 block numbers relative to the chunk,
// strictly increasing, then the k blocks' floats (the buffer's last block
// may be short). The receiver checks every field against its own layout and
// throws TransferError("payload") on any mismatch.
//
// Exactness and summation order: element i of segment j is summed as
//   (((x_(j+1) + x_(j+2)) + x_(j+3)) + ... ) + x_j   (rank numbers mod N),
// the order of the dense ring reduce-scatter; a zero block a rank skips is
// an exact x + 0 = x, so the result is bit-identical to that sum in that
// order (except that -0.0 + +0.0 may stay -0.0 where the dense sum gives
// +0.0: equal as values). Every rank ends with the owner's bits.
//
// Wire bytes: charged to ctx.counters per message sent (forwards included).
#include "comm/algorithms/block_sparse_allreduce.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>

#include "comm/algorithms/codec_steps.h"
#include "comm/algorithms/progress.h"
#include "comm/algorithms/transfer_error.h"
#include "compress/block_sparse_codec.h"

namespace cmpi::comm {
namespace {

struct Chunk {
  size_t first_block = 0, blocks = 0;
};

struct Incoming {
  std::unique_ptr<uint8_t[]> bytes;
  Progress::RequestId request = 0;
  int segment = 0;
  Chunk chunk;
};

struct Outgoing {
  std::unique_ptr<uint8_t[]> owned;  // null when forwarding a received message
};

class BlockSparseRing {
 public:
  BlockSparseRing(CompressedContext& ctx, float* data, size_t n, size_t block,
                  const std::vector<uint8_t>& marks)
      : ctx_(ctx),
        data_(data),
        layout_(block_layout(n, block, ctx.size)),
        chunk_blocks_(std::max<size_t>(1, ctx.chunk_elems / block)),
        max_message_bytes_(4 + 4 * chunk_blocks_ + 4 * chunk_blocks_ * block),
        nonzero_(marks),
        progress_(ctx) {}

  void run() {
    const int n_ranks = ctx_.size, r = ctx_.rank;
    auto segment = [&](int s) { return ((s % n_ranks) + n_ranks) % n_ranks; };
    // Receives, in the order the left neighbour sends them.
    for (int s = 0; s < n_ranks - 1; ++s) post_receives(segment(r - 2 - s));
    for (int t = 0; t < n_ranks - 1; ++t) post_receives(segment(r - 1 - t));

    for (const Chunk& c : chunks(segment(r - 1))) send_own(c);
    size_t next = 0;
    for (int s = 0; s < n_ranks - 1; ++s) {
      for (size_t k = 0; k < chunks(segment(r - 2 - s)).size(); ++k) {
        Incoming& in = incoming_[next++];
        const size_t bytes = receive(in);
        add_received(in, bytes);
        // The summed chunk moves on: to the next reduce-scatter step, or, on
        // the last step (this rank's own segment, now final), to the
        // allgather's first step.
        send_own(in.chunk);
        in.bytes.reset();
      }
    }
    for (int t = 0; t < n_ranks - 1; ++t) {
      for (size_t k = 0; k < chunks(segment(r - 1 - t)).size(); ++k) {
        Incoming& in = incoming_[next++];
        const size_t bytes = receive(in);
        if (t < n_ranks - 2) forward(in, bytes);
        write_final(in, bytes);
      }
    }
    for (Progress::RequestId id : sends_) progress_.wait(id);
    completed_ = true;
  }

  ~BlockSparseRing() {
    if (completed_) return;
    for (Incoming& in : incoming_) in.bytes.release();
    for (Outgoing& out : outgoing_) out.owned.release();
  }
  BlockSparseRing(const BlockSparseRing&) = delete;
  BlockSparseRing& operator=(const BlockSparseRing&) = delete;

 private:
  std::vector<Chunk> chunks(int segment) const {
    std::vector<Chunk> out;
    const size_t first = layout_.segment_first_block[size_t(segment)];
    const size_t end = layout_.segment_first_block[size_t(segment) + 1];
    for (size_t b = first; b < end; b += chunk_blocks_)
      out.push_back({b, std::min(chunk_blocks_, end - b)});
    return out;
  }

  size_t block_length(size_t b) const {
    return std::min(layout_.block, layout_.n - b * layout_.block);
  }

  void post_receives(int segment) {
    for (const Chunk& c : chunks(segment)) {
      Incoming in;
      in.bytes.reset(new uint8_t[max_message_bytes_]);  // uninitialised on purpose
      in.segment = segment;
      in.chunk = c;
      MPI_Request request;
      MPI_Irecv(in.bytes.get(), int(max_message_bytes_), MPI_BYTE,
                (ctx_.rank - 1 + ctx_.size) % ctx_.size, ctx_.tag, ctx_.comm, &request);
      in.request = progress_.track(request, true);
      incoming_.push_back(std::move(in));
    }
  }

  size_t receive(Incoming& in) {
    progress_.wait(in.request);
    int count = 0;
    MPI_Get_count(&progress_.status(in.request), MPI_BYTE, &count);
    check_message(in, size_t(count));
    return size_t(count);
  }

  [[noreturn]] void fail(const Incoming& in, const std::string& what) const {
    throw TransferError("payload", describe_call(ctx_, Op::kAllreduce) + " (block-sparse): rank " +
                                       std::to_string(ctx_.rank) + " receiving segment " +
                                       std::to_string(in.segment) + " from rank " +
                                       std::to_string((ctx_.rank - 1 + ctx_.size) % ctx_.size) +
                                       ": " + what);
  }

  void check_message(const Incoming& in, size_t bytes) const {
    if (bytes < 4) fail(in, "message of " + std::to_string(bytes) + " bytes has no block count");
    uint32_t k;
    std::memcpy(&k, in.bytes.get(), 4);
    if (k > in.chunk.blocks || bytes < 4 + 4 * size_t(k))
      fail(in, "block count " + std::to_string(k) + " does not fit a chunk of " +
                   std::to_string(in.chunk.blocks) + " blocks in " + std::to_string(bytes) +
                   " bytes");
    const uint8_t* index = in.bytes.get() + 4;
    size_t floats = 0;
    int64_t previous = -1;
    for (uint32_t i = 0; i < k; ++i) {
      uint32_t b;
      std::memcpy(&b, index + 4 * size_t(i), 4);
      if (int64_t(b) <= previous || b >= in.chunk.blocks)
        fail(in, "block numbers not increasing within the chunk");
      previous = b;
      floats += block_length(in.chunk.first_block + b);
    }
    if (bytes != 4 + 4 * size_t(k) + 4 * floats)
      fail(in, std::to_string(k) + " blocks need " + std::to_string(4 + 4 * k + 4 * floats) +
                   " bytes, the message holds " + std::to_string(bytes));
  }

  // Calls fn(block, values) for each block of a checked message.
  template <typename Fn>
  void for_each_block(const Incoming& in, Fn fn) const {
    uint32_t k;
    std::memcpy(&k, in.bytes.get(), 4);
    const uint8_t* index = in.bytes.get() + 4;
    const uint8_t* values = index + 4 * size_t(k);
    for (uint32_t i = 0; i < k; ++i) {
      uint32_t b;
      std::memcpy(&b, index + 4 * size_t(i), 4);
      const size_t block = in.chunk.first_block + b;
      fn(block, reinterpret_cast<const float*>(values));
      values += 4 * block_length(block);
    }
  }

  void add_received(const Incoming& in, size_t) {
    const double start = MPI_Wtime();
    for_each_block(in, [&](size_t b, const float* values) {
      float* out = data_ + b * layout_.block;
      const size_t len = block_length(b);
      // received (ranks before this one in the segment's order) + own value
      for (size_t i = 0; i < len; ++i) out[i] = values[i] + out[i];
      nonzero_[b] = 1;
    });
    add_decode_seconds(ctx_, MPI_Wtime() - start);
  }

  void write_final(const Incoming& in, size_t) {
    const double start = MPI_Wtime();
    size_t next = in.chunk.first_block;
    auto zero_until = [&](size_t end) {
      for (; next < end; ++next)
        if (nonzero_[next])
          std::memset(data_ + next * layout_.block, 0, block_length(next) * sizeof(float));
    };
    for_each_block(in, [&](size_t b, const float* values) {
      zero_until(b);
      std::memcpy(data_ + b * layout_.block, values, block_length(b) * sizeof(float));
      next = b + 1;
    });
    zero_until(in.chunk.first_block + in.chunk.blocks);
    add_decode_seconds(ctx_, MPI_Wtime() - start);
  }

  // Sends the blocks of chunk c marked non-zero, from data_.
  void send_own(const Chunk& c) {
    const double start = MPI_Wtime();
    size_t k = 0, floats = 0;
    for (size_t b = c.first_block; b < c.first_block + c.blocks; ++b)
      if (nonzero_[b]) {
        ++k;
        floats += block_length(b);
      }
    const size_t bytes = 4 + 4 * k + 4 * floats;
    Outgoing out;
    out.owned.reset(new uint8_t[bytes]);
    const uint32_t count = uint32_t(k);
    std::memcpy(out.owned.get(), &count, 4);
    uint8_t* index = out.owned.get() + 4;
    uint8_t* values = index + 4 * k;
    for (size_t b = c.first_block; b < c.first_block + c.blocks; ++b) {
      if (!nonzero_[b]) continue;
      const uint32_t relative = uint32_t(b - c.first_block);
      std::memcpy(index, &relative, 4);
      index += 4;
      const size_t len = block_length(b);
      std::memcpy(values, data_ + b * layout_.block, len * sizeof(float));
      values += len * sizeof(float);
    }
    add_encode_seconds(ctx_, MPI_Wtime() - start);
    start_send(out.owned.get(), bytes);
    outgoing_.push_back(std::move(out));
  }

  void forward(Incoming& in, size_t bytes) {
    start_send(in.bytes.get(), bytes);  // in.bytes lives until the call ends
  }

  void start_send(const uint8_t* bytes, size_t size) {
    MPI_Request request;
    MPI_Isend(bytes, int(size), MPI_BYTE, (ctx_.rank + 1) % ctx_.size, ctx_.tag, ctx_.comm,
              &request);
    sends_.push_back(progress_.track(request, false));
    add_wire_bytes(ctx_, size);
  }

  CompressedContext& ctx_;
  float* data_;
  BlockLayout layout_;
  size_t chunk_blocks_;
  size_t max_message_bytes_;
  std::vector<uint8_t> nonzero_;  // blocks of data_ that may hold non-zero bits
  std::deque<Incoming> incoming_;
  std::deque<Outgoing> outgoing_;
  std::vector<Progress::RequestId> sends_;
  // Destroyed first: on an error path it cancels or frees what is still in
  // flight, and ~BlockSparseRing leaks the buffers those requests may still
  // touch (the job is expected to abort after such an error).
  Progress progress_;
  bool completed_ = false;
};

}  // namespace

BlockLayout block_layout(size_t n, size_t block, int ranks) {
  BlockLayout layout;
  layout.n = n;
  layout.block = block;
  layout.blocks = (n + block - 1) / block;
  const size_t r = size_t(ranks);
  layout.segment_first_block.resize(r + 1);
  for (size_t j = 0; j <= r; ++j)
    layout.segment_first_block[j] = j * (layout.blocks / r) + std::min(j, layout.blocks % r);
  return layout;
}

size_t mark_nonzero_blocks(const float* data, size_t n, size_t block, std::vector<uint8_t>& marks) {
  const size_t blocks = (n + block - 1) / block;
  marks.resize(blocks);
  size_t count = 0;
  for (size_t b = 0; b < blocks; ++b) {
    const size_t start = b * block;
    marks[b] = compress::block_has_nonzero_bits(data + start, std::min(block, n - start)) ? 1 : 0;
    count += marks[b];
  }
  return count;
}

void block_sparse_allreduce(CompressedContext& ctx, float* data, size_t n, size_t block,
                            const std::vector<uint8_t>& nonzero_marks) {
  if (ctx.size == 1 || n == 0) return;
  if (block == 0 || nonzero_marks.size() != (n + block - 1) / block)
    throw std::invalid_argument(describe_call(ctx, Op::kAllreduce) +
                                " (block-sparse): " + std::to_string(nonzero_marks.size()) +
                                " block marks for " + std::to_string(n) + " floats in blocks of " +
                                std::to_string(block));
  BlockSparseRing ring(ctx, data, n, block, nonzero_marks);
  ring.run();
}

}  // namespace cmpi::comm
