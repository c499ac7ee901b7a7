// When the block-sparse allreduce pays: a crossover density derived from
// costs measured on the group itself, not a guessed constant.
//
// Density here is D = (sum over ranks of non-zero blocks) / blocks, which
// one 8-byte allreduce gives every rank alike (so all take the same path).
// D bounds the union of non-zero blocks, which is what the ring's messages
// carry; it is 1 when the ranks' blocks are disjoint and cover the buffer,
// N when every rank is dense.
//
// Calibration, once per communicator and size class (floor(log2 n)), on the
// first call of that class with `select: auto`: the communicator times, on
// scratch buffers of the call's size, the dense allreduce it would
// otherwise run and the block-sparse one at three densities -- D = 0 (all
// blocks zero: the fixed cost), D = 1 (rank r holds the blocks b with
// b mod N == r: disjoint, covering everything) and D = N (all dense). Each
// figure is the slowest rank's time (one allreduce of the timings), best of
// two runs. Between the points the block-sparse cost is interpolated
// linearly; the crossover is the D where it meets the dense cost. A call
// takes the block-sparse path when its D lies below the crossover.
// Calibration costs 8 allreduces of the call's size, once per class.
#pragma once

#include <cstddef>
#include <functional>
#include <map>

namespace cmpi::comm {

// Seconds (slowest rank) for one allreduce of the size class.
struct BlockSparseCosts {
  double dense = 0;
  double sparse_empty = 0;     // D = 0
  double sparse_disjoint = 0;  // D = 1
  double sparse_full = 0;      // D = ranks
};

// The D in [0, ranks] at which the interpolated block-sparse cost reaches
// the dense cost: 0 when even an empty block-sparse call is no cheaper,
// `ranks` (always block-sparse) when even the full one is cheaper.
double block_sparse_crossover(const BlockSparseCosts& costs, int ranks);

class BlockSparseCalibration {
 public:
  using Measure = std::function<BlockSparseCosts(size_t n)>;

  // The crossover for allreduces of n floats; measures (collectively: every
  // rank must call this for the same n) on the first call of n's class.
  double crossover(size_t n, int ranks, const Measure& measure);
  // Measured classes: floor(log2 n) -> crossover (for stats and tests).
  const std::map<int, double>& by_size_class() const { return by_class_; }

 private:
  std::map<int, double> by_class_;
};

}  // namespace cmpi::comm
