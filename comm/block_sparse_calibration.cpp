#include "comm/block_sparse_calibration.h"

#include <cmath>

namespace cmpi::comm {
namespace {

int size_class(size_t n) {
  int c = 0;
  while (n > 1) {
    n >>= 1;
    ++c;
  }
  return c;
}

// The x in [x0, x1] where the line from (x0, y0) to (x1, y1) reaches `level`
// (y0 < level <= y1).
double reach(double x0, double y0, double x1, double y1, double level) {
  return x0 + (x1 - x0) * (level - y0) / (y1 - y0);
}

}  // namespace

double block_sparse_crossover(const BlockSparseCosts& c, int ranks) {
  const double full_density = double(ranks);
  if (c.sparse_empty >= c.dense) return 0;
  if (c.sparse_disjoint >= c.dense) return reach(0, c.sparse_empty, 1, c.sparse_disjoint, c.dense);
  if (c.sparse_full >= c.dense && ranks > 1)
    return reach(1, c.sparse_disjoint, full_density, c.sparse_full, c.dense);
  return full_density;
}

void BlockSparseCalibration::set(uint64_t routes, size_t n, double crossover) {
  measured_[{routes, size_class(n)}] = crossover;
}

double BlockSparseCalibration::crossover(uint64_t routes, size_t n, int ranks,
                                         const Measure& measure) {
  const std::pair<uint64_t, int> key(routes, size_class(n));
  auto it = measured_.find(key);
  if (it != measured_.end()) return it->second;
  const double crossover = block_sparse_crossover(measure(n), ranks);
  measured_[key] = crossover;
  return crossover;
}

}  // namespace cmpi::comm
