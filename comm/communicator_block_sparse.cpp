// The Communicator's block-sparse routes (its allreduce calls these):
//   - a `block_sparse` rule: measure the group's density of non-zero blocks
//     and run the block-sparse allreduce below the crossover calibrated
//     against the fallback route (the next matching rule's, or raw);
//   - a sparsifier rule (topk, randomk, threshold, sidco): sparsify this
//     rank's buffer once and sum the sparsified buffers block-sparse, when
//     that measured cheaper than the codec's ring.
// How the crossovers are measured: comm/block_sparse_calibration.h.
#include <algorithm>
#include <functional>
#include <vector>

#include "comm/algorithms/block_sparse_allreduce.h"
#include "comm/algorithms/codec_steps.h"
#include "comm/call_accounting.h"
#include "comm/communicator.h"
#include "comm/test_faults.h"
#include "compress/block_sparse_codec.h"

namespace cmpi::comm {
namespace {

// Tests only (comm/test_faults.h, block_sparse:sparse|dense): the costs a
// calibration gets instead of timing, so that two runs can be made to decide
// differently on purpose. Read when a calibration runs (once per route pair
// and size class), the same on every rank.
bool forced_costs(BlockSparseCosts& costs) {
  const ForcedBlockSparse forced = TestFaults::from_environment().block_sparse;
  if (forced == ForcedBlockSparse::kNone) return false;
  const double sparse = forced == ForcedBlockSparse::kSparse ? 0.0 : 1.0;
  costs.dense = 1.0 - sparse;
  costs.sparse_empty = costs.sparse_disjoint = costs.sparse_full = sparse;
  return true;
}

}  // namespace

bool Communicator::block_sparse_allreduce_if_cheaper(const Route& route, const Route* fallback,
                                                     float* data, size_t n, uint64_t raw_bytes,
                                                     uint64_t buffer_key) {
  const auto& codec = static_cast<const compress::BlockSparseCodec&>(*route.codec);
  const size_t block = codec.block_floats();
  const double start = MPI_Wtime();
  const size_t own = mark_nonzero_blocks(data, n, block, block_marks_);
  if (codec.select() == compress::BlockSparseCodec::Select::kAuto && size_ > 1) {
    // Every rank must take the same path: decide on the group's total.
    unsigned long long mine = own, total = 0;
    MPI_Allreduce(&mine, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm_);
    const double density = n ? double(total) / double(block_marks_.size()) : 0.0;
    const uint64_t pair =
        BlockSparseCalibration::route_pair(route.rule, fallback ? fallback->rule : -1);
    const double crossover = block_sparse_calibration_.crossover(pair, n, size_, [&](size_t m) {
      BlockSparseCosts forced;
      return forced_costs(forced) ? forced : measure_block_sparse_costs(route, fallback, m);
    });
    OpCounters& decided = stats_.at(Op::kAllreduce);
    decided.block_decisions += 1;
    decided.block_density_sum += density / double(size_);
    if (!takes_block_sparse(density, crossover, size_)) {
      decided.block_fallbacks += 1;
      return false;
    }
  }
  OpCounters& counters = stats_.at(Op::kAllreduce);
  CompressedCall call(counters, collective_locality());
  counters.seconds += MPI_Wtime() - start;  // the density measure, before the call's clock
  counters.calls += 1;
  counters.compressed_calls += 1;
  counters.raw_bytes += raw_bytes;
  CompressedContext ctx = context(route, Op::kAllreduce, internal_, next_tag(), buffer_key);
  block_sparse_allreduce(ctx, data, n, block, block_marks_);
  return true;
}

namespace {

bool is_sparsifier(compress::CodecId id) {
  return id == compress::CodecId::kTopK || id == compress::CodecId::kRandomK ||
         id == compress::CodecId::kThreshold || id == compress::CodecId::kSidco;
}

}  // namespace

bool Communicator::sparsified_block_sparse_pays(const Route& route, const float* data, size_t n) {
  if (size_ < 2 || !is_sparsifier(route.codec->id())) return false;
  const uint64_t pair = BlockSparseCalibration::route_pair(route.rule, route.rule);
  const double crossover = block_sparse_calibration_.crossover(pair, n, size_, [&](size_t) {
    BlockSparseCosts forced;
    if (forced_costs(forced)) return forced;
    // The two paths end to end on copies of this call's own data; nothing
    // they do reaches the stats, the residuals or the codec's generator.
    const std::vector<uint64_t> random_state = route.codec->random_state();
    std::vector<float> copy(n);
    std::vector<uint8_t> marks;
    OpCounters uncounted;
    const double ring = slowest_rank_seconds([&] { std::copy(data, data + n, copy.begin()); },
                                             [&] {
                                               CompressedContext ctx = context(
                                                   route, Op::kAllreduce, internal_, next_tag(), 0);
                                               ctx.feedback = nullptr;
                                               ctx.counters = &uncounted;
                                               ring_allreduce(ctx, copy.data(), n);
                                             });
    const double sparse = slowest_rank_seconds(
        [&] { std::copy(data, data + n, copy.begin()); },
        [&] {
          sparsify(route, copy.data(), n, nullptr, 0, uncounted);
          mark_nonzero_blocks(copy.data(), n, kSparsifiedBlockFloats, marks);
          CompressedContext ctx = context(route, Op::kAllreduce, internal_, next_tag(), 0);
          ctx.counters = &uncounted;
          block_sparse_allreduce(ctx, copy.data(), n, kSparsifiedBlockFloats, marks);
        });
    if (!random_state.empty()) route.codec->restore_random_state(random_state);
    // As block-sparse costs that do not depend on the density: a crossover
    // of N when they are below the ring's, else 0.
    BlockSparseCosts costs;
    costs.dense = ring;
    costs.sparse_empty = costs.sparse_disjoint = costs.sparse_full = sparse;
    return costs;
  });
  return crossover >= double(size_);
}

void Communicator::sparsify(const Route& route, float* data, size_t n,
                            compress::ErrorFeedback* feedback, uint64_t key, OpCounters& counters) {
  sparsify_payload_.resize(route.codec->max_encoded_bytes(n));
  double start = MPI_Wtime();
  const size_t size =
      feedback ? feedback->encode(key, data, n, sparsify_payload_.data(), sparsify_payload_.size())
               : route.codec->encode(data, n, sparsify_payload_.data(), sparsify_payload_.size());
  counters.encode_seconds += MPI_Wtime() - start;
  start = MPI_Wtime();
  route.codec->decode(sparsify_payload_.data(), size, data, n);
  counters.decode_seconds += MPI_Wtime() - start;
}

void Communicator::sparsified_block_sparse_allreduce(const Route& route, float* data, size_t n,
                                                     uint64_t raw_bytes, uint64_t buffer_key) {
  OpCounters& counters = stats_.at(Op::kAllreduce);
  CompressedCall call(counters, collective_locality());
  begin_compressed(route, Op::kAllreduce, raw_bytes, data, n);
  sparsify(route, data, n, route.feedback,
           feedback_key(buffer_key, FeedbackSite::kSparsifiedInput, 0, 0), counters);
  mark_nonzero_blocks(data, n, kSparsifiedBlockFloats, block_marks_);
  CompressedContext ctx = context(route, Op::kAllreduce, internal_, next_tag(), buffer_key);
  block_sparse_allreduce(ctx, data, n, kSparsifiedBlockFloats, block_marks_);
}

double Communicator::slowest_rank_seconds(const std::function<void()>& prepare,
                                          const std::function<void()>& run) {
  double best = 0;
  for (int attempt = 0; attempt < 2; ++attempt) {
    prepare();
    MPI_Barrier(comm_);
    const double start = MPI_Wtime();
    run();
    double mine = MPI_Wtime() - start, slowest = 0;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm_);
    best = attempt == 0 ? slowest : std::min(best, slowest);
  }
  return best;
}

BlockSparseCosts Communicator::measure_block_sparse_costs(const Route& route, const Route* fallback,
                                                          size_t n) {
  const size_t block = static_cast<const compress::BlockSparseCodec&>(*route.codec).block_floats();
  std::vector<float> scratch(n);
  std::vector<uint8_t> marks;
  OpCounters uncounted;  // calibration traffic stays out of the group's stats
  // Gradient-like values (a codec's speed may depend on them: mpc, top-k),
  // the same on every call, in the blocks `nonzero` keeps.
  auto fill_blocks = [&](auto nonzero) {
    return [&, nonzero] {
      uint64_t state = uint64_t(rank_) + 1;
      for (size_t b = 0; b * block < n; ++b) {
        const bool keep = nonzero(b);
        for (size_t i = b * block; i < std::min(n, (b + 1) * block); ++i) {
          state = state * 6364136223846793005ull + 1442695040888963407ull;
          scratch[i] = keep ? float(int64_t(state >> 40) - (int64_t(1) << 23)) * 0x1p-30f : 0.f;
        }
        if (keep && b * block < n) scratch[b * block] += 0x1p-10f;  // never all zero
      }
      mark_nonzero_blocks(scratch.data(), n, block, marks);
    };
  };
  // The fallback as the call would run it, minus what must not see
  // calibration traffic: error feedback (residuals are the real calls'),
  // and a stochastic codec's generator (put back afterwards).
  auto dense = [&] {
    if (fallback == nullptr) {
      raw_allreduce(scratch.data(), n, 0, uncounted);
      return;
    }
    const std::vector<uint64_t> random_state = fallback->codec->random_state();
    CompressedContext ctx = context(*fallback, Op::kAllreduce, internal_, next_tag(), 0);
    ctx.feedback = nullptr;
    ctx.counters = &uncounted;
    ring_allreduce(ctx, scratch.data(), n);
    if (!random_state.empty()) fallback->codec->restore_random_state(random_state);
  };
  auto sparse = [&] {
    CompressedContext ctx = context(route, Op::kAllreduce, internal_, next_tag(), 0);
    ctx.counters = &uncounted;
    block_sparse_allreduce(ctx, scratch.data(), n, block, marks);
  };
  const size_t ranks = size_t(size_), me = size_t(rank_);
  BlockSparseCosts costs;
  costs.dense = slowest_rank_seconds(fill_blocks([](size_t) { return true; }), dense);
  costs.sparse_empty = slowest_rank_seconds(fill_blocks([](size_t) { return false; }), sparse);
  costs.sparse_disjoint =
      slowest_rank_seconds(fill_blocks([ranks, me](size_t b) { return b % ranks == me; }), sparse);
  costs.sparse_full = slowest_rank_seconds(fill_blocks([](size_t) { return true; }), sparse);
  return costs;
}

}  // namespace cmpi::comm
