// Single-process pieces of the trainer: the Markov data source (entropy
// rate, determinism, the batch split), the learning-rate schedule, and the
// bucketed gradient layout.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "tests/support/test_seed.h"
#include "trainer/lr_schedule.h"
#include "data/markov_source.h"

namespace cmpi::trainer {
namespace {

using data::MarkovSource;

TEST(MarkovSource, EmpiricalConditionalEntropyMatchesEntropyRate) {
  const uint64_t seed = cmpi::testing::test_seed();
  MarkovSource source(32, 4, 1.0, seed);
  EXPECT_GT(source.entropy_rate(), 0.0);
  EXPECT_LE(source.entropy_rate(), std::log(4.0) + 1e-12);
  // Estimate H(X_{t+1} | X_t) from samples: it must match the stated rate.
  std::map<std::pair<int64_t, int64_t>, double> pair_counts;
  std::map<int64_t, double> from_counts;
  std::vector<int64_t> seq(65);
  double transitions = 0;
  for (uint64_t i = 0; i < 4000; ++i) {
    source.sample(0, i, seq.data(), 65);
    for (int t = 0; t + 1 < 65; ++t) {
      pair_counts[{seq[t], seq[t + 1]}] += 1;
      from_counts[seq[t]] += 1;
      transitions += 1;
    }
  }
  double h = 0;
  for (const auto& [pair, count] : pair_counts)
    h -= count / transitions * std::log(count / from_counts[pair.first]);
  EXPECT_NEAR(h, source.entropy_rate(), 0.02) << "seed " << seed;
}

TEST(MarkovSource, SequencesDependOnlyOnStepAndIndex) {
  MarkovSource a(50, 3, 0.5, 7), b(50, 3, 0.5, 7);
  std::vector<int64_t> x(20), y(20), z(20);
  a.sample(3, 11, x.data(), 20);
  b.sample(3, 11, y.data(), 20);
  a.sample(3, 12, z.data(), 20);
  EXPECT_EQ(x, y);
  EXPECT_NE(x, z);
}

TEST(MarkovSource, RejectsBadShape) {
  EXPECT_THROW(MarkovSource(1, 1, 1.0, 0), std::invalid_argument);
  EXPECT_THROW(MarkovSource(8, 9, 1.0, 0), std::invalid_argument);
}

TEST(LrSchedule, WarmupThenCosineToMin) {
  LrSchedule s{1e-3, 1e-4, 10, 110};
  EXPECT_NEAR(s.at(0), 1e-4, 1e-12);
  EXPECT_NEAR(s.at(9), 1e-3, 1e-12);
  EXPECT_NEAR(s.at(10), 1e-3, 1e-12);
  EXPECT_NEAR(s.at(109), 1e-4, 1e-12);
  EXPECT_NEAR(s.at(10 + 99 / 2.0), 0.5 * (1e-3 + 1e-4), 2e-5);
  for (int64_t i = 11; i < 110; ++i) EXPECT_LE(s.at(i), s.at(i - 1));
}

}  // namespace
}  // namespace cmpi::trainer
