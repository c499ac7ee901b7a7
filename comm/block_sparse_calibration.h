// When the block-sparse allreduce pays: a crossover density derived from
// costs measured on the group itself, not a guessed constant.
//
// Density here is D = (sum over ranks of non-zero blocks) / blocks, which
// one 8-byte allreduce gives every rank alike (so all take the same path).
// D bounds the union of non-zero blocks, which is what the ring's messages
// carry; it is 1 when the ranks' blocks are disjoint and cover the buffer,
// N when every rank is dense.
//
// Calibration, once per communicator, route pair and size class
// (floor(log2 n)), on the first call of that class with `select: auto`: the
// communicator times, on scratch buffers of the call's size, the dense
// allreduce it would otherwise run (the fallback route: the next matching
// rule's codec on the ring, or the raw allreduce) and the block-sparse one
// at three densities -- D = 0 (all
// blocks zero: the fixed cost), D = 1 (rank r holds the blocks b with
// b mod N == r: disjoint, covering everything) and D = N (all dense). Each
// figure is the slowest rank's time (one allreduce of the timings), best of
// two runs. Between the points the block-sparse cost is interpolated
// linearly; the crossover is the D where it meets the dense cost. A call
// takes the block-sparse path when its D lies below the crossover (or the
// crossover is N: block-sparse at every density).
// Calibration costs 8 allreduces of the call's size, once per class.
//
// Sparsifier output (a route whose codec is topk, randomk, threshold or
// sidco): the ring re-sparsifies every partial sum, which costs a selection
// per hop and loses what each one drops. The alternative sparsifies this
// rank's own buffer once (through the route's error feedback) and sums the
// sparsified buffers exactly with the block-sparse allreduce in blocks of
// kSparsifiedBlockFloats. Which is cheaper depends on how the kept entries
// scatter over blocks (top-k at 1 % of elements fills ~92 % of 256-float
// blocks but ~4 % of 4-float ones), so it is measured, once per route and
// size class, on a copy of the first call's own data: both paths end to end
// (sparsify included), slowest rank, best of two; 4 allreduces. The result
// is stored as a crossover of 0 (the ring) or N (block-sparse) under
// route_pair(rule, rule).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <utility>

namespace cmpi::comm {

// Block size of the block-sparse sum of sparsifier output: at 1 % of 16 MiB
// kept per rank on 4 ranks at 1 Gbit/s, blocks of 4 floats took 105 ms,
// blocks of 16 157 ms and of 256 383 ms (docs/benchmarks.md).
constexpr size_t kSparsifiedBlockFloats = 4;

// Seconds (slowest rank) for one allreduce of the size class.
struct BlockSparseCosts {
  double dense = 0;            // the fallback route (what the call takes when too dense)
  double sparse_empty = 0;     // D = 0
  double sparse_disjoint = 0;  // D = 1
  double sparse_full = 0;      // D = ranks
};

// The D in [0, ranks] at which the interpolated block-sparse cost reaches
// the dense cost: 0 when even an empty block-sparse call is no cheaper,
// `ranks` (always block-sparse) when even the full one is cheaper.
double block_sparse_crossover(const BlockSparseCosts& costs, int ranks);

// Whether a call of density D takes the block-sparse path: below the
// crossover, or at any density when the crossover is `ranks` (even the
// all-dense block-sparse call measured cheaper than the fallback).
inline bool takes_block_sparse(double density, double crossover, int ranks) {
  return density < crossover || crossover >= double(ranks);
}

class BlockSparseCalibration {
 public:
  using Measure = std::function<BlockSparseCosts(size_t n)>;

  // Names a pair of policy rules: the block-sparse rule's index and the
  // fallback's (-1: raw).
  static uint64_t route_pair(int block_sparse_rule, int fallback_rule) {
    return uint64_t(uint32_t(block_sparse_rule)) << 32 | uint32_t(fallback_rule);
  }
  // The crossover for allreduces of n floats between the pair of routes;
  // measures (collectively: every rank must call this for the same n and
  // routes) on the first call of n's class.
  double crossover(uint64_t routes, size_t n, int ranks, const Measure& measure);
  // Puts in the crossover of n's class for the pair, as if measured (every
  // rank alike), so that tests can fix the decision the timing would make.
  void set(uint64_t routes, size_t n, double crossover);
  // Measured (routes, floor(log2 n)) -> crossover (for stats and tests).
  const std::map<std::pair<uint64_t, int>, double>& measured() const { return measured_; }

 private:
  std::map<std::pair<uint64_t, int>, double> measured_;
};

}  // namespace cmpi::comm
