// The block-sparse crossovers a checkpoint keeps (comm/block_sparse_crossovers.h):
// saved words put back into a fresh calibration give every (route pair,
// size class) its crossover bit for bit, so the restored calibration
// decides without measuring (its measure is never called); words that are
// not whole or valid entries are refused.
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "comm/block_sparse_crossovers.h"

namespace cmpi::comm {
namespace {

TEST(BlockSparseCrossovers, RestoredCrossoversDecideWithoutMeasuring) {
  BlockSparseCalibration saved;
  const uint64_t embedding = BlockSparseCalibration::route_pair(7, -1);
  const uint64_t sparsified = BlockSparseCalibration::route_pair(2, 2);
  const auto measured = [](double crossover) {
    // Costs whose crossover is `crossover` on 4 ranks: dense 1, block-sparse
    // rising from 0 at D = 0 to 1 at D = crossover (< 1).
    return [crossover](size_t) {
      BlockSparseCosts costs;
      costs.dense = 1;
      costs.sparse_empty = 0;
      costs.sparse_disjoint = 1 / crossover;
      costs.sparse_full = 10;
      return costs;
    };
  };
  const double a = saved.crossover(embedding, 5000, 4, measured(0.3));
  const double b = saved.crossover(embedding, 1 << 20, 4, measured(0.7));
  const double c = saved.crossover(sparsified, 100, 4, [](size_t) {
    BlockSparseCosts always;  // block-sparse cheaper at every density
    always.dense = 1;
    return always;
  });
  EXPECT_DOUBLE_EQ(c, 4.0);

  BlockSparseCalibration restored;
  restore_crossover_words(restored, crossover_words(saved));
  EXPECT_EQ(restored.measured(), saved.measured());
  const auto never = [](size_t) -> BlockSparseCosts {
    ADD_FAILURE() << "a restored crossover was measured again";
    return {};
  };
  for (const auto& [n, routes, want] :
       {std::tuple{size_t(4097), embedding, a}, std::tuple{size_t(1 << 20), embedding, b},
        std::tuple{size_t(127), sparsified, c}}) {
    const double got = restored.crossover(routes, n, 4, never);
    EXPECT_EQ(std::memcmp(&got, &want, sizeof got), 0) << n;
  }
}

TEST(BlockSparseCrossovers, WordsThatAreNoEntriesAreRefused) {
  BlockSparseCalibration calibration;
  EXPECT_THROW(restore_crossover_words(calibration, {1, 2}), std::invalid_argument);
  double negative = -1;
  uint64_t bits = 0;
  std::memcpy(&bits, &negative, sizeof bits);
  EXPECT_THROW(restore_crossover_words(calibration, {1, 3, bits}), std::invalid_argument);
  EXPECT_THROW(restore_crossover_words(calibration, {1, 64, 0}), std::invalid_argument);
  EXPECT_TRUE(calibration.measured().empty());
  restore_crossover_words(calibration, {});
  EXPECT_TRUE(calibration.measured().empty());
}

}  // namespace
}  // namespace cmpi::comm
