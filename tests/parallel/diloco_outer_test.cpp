// DiLoCo's torch-free parts: the outer Nesterov step against a hand
// computation, and the sync schedule of the streaming variant (which
// fragment at which step, the fragments of the layers).
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "parallel/diloco/outer_nesterov.h"
#include "parallel/diloco/sync_schedule.h"

namespace cmpi::parallel {
namespace {

// Two outer steps on three values, worked by hand (lr 0.5, momentum 0.5;
// every intermediate exact in float):
//   step 1, g = (1, -2, 0.5): m = g = (1, -2, 0.5);
//     outer -= 0.5 * (g + 0.5 m) = 0.5 * (1.5, -3, 0.75): (4, 2, -1) -> (3.25, 3.5, -1.375)
//   step 2, g = (0.5, 1, -1): m = 0.5 * (1, -2, 0.5) + g = (1, 0, -0.75);
//     outer -= 0.5 * (g + 0.5 m) = 0.5 * (1, 1, -1.375): -> (2.75, 3, -0.6875)
TEST(DilocoOuterStep, NesterovMatchesAHandComputation) {
  const OuterSgdSettings settings{0.5, 0.5};
  std::vector<float> outer = {4, 2, -1}, momentum = {0, 0, 0};
  const std::vector<float> g1 = {1, -2, 0.5f}, g2 = {0.5f, 1, -1};
  outer_nesterov_step(settings, g1.data(), momentum.data(), outer.data(), 3);
  EXPECT_EQ(momentum, (std::vector<float>{1, -2, 0.5f}));
  EXPECT_EQ(outer, (std::vector<float>{3.25f, 3.5f, -1.375f}));
  outer_nesterov_step(settings, g2.data(), momentum.data(), outer.data(), 3);
  EXPECT_EQ(momentum, (std::vector<float>{1, 0, -0.75f}));
  EXPECT_EQ(outer, (std::vector<float>{2.75f, 3, -0.6875f}));
}

// lr 1 without momentum: the outer weights become outer - mean(outer -
// local), the average of the replicas' weights.
TEST(DilocoOuterStep, RateOneWithoutMomentumAveragesTheReplicas) {
  const OuterSgdSettings settings{1.0, 0.0};
  const std::vector<float> start = {1, 2}, replica_a = {0.5f, 3}, replica_b = {1.5f, 4};
  std::vector<float> delta(2), momentum(2, 0), outer = start;
  for (size_t i = 0; i < 2; ++i)
    delta[i] = ((start[i] - replica_a[i]) + (start[i] - replica_b[i])) / 2;
  outer_nesterov_step(settings, delta.data(), momentum.data(), outer.data(), 2);
  EXPECT_EQ(outer, (std::vector<float>{1, 3.5f}));
}

TEST(DilocoSchedule, OneFragmentSyncsEveryInterval) {
  const SyncSchedule s(4, 1);
  std::vector<int64_t> synced;
  for (int64_t done = 0; done <= 12; ++done)
    if (!s.due(done).empty()) synced.push_back(done);
  EXPECT_EQ(synced, (std::vector<int64_t>{4, 8, 12}));
  EXPECT_EQ(s.since_sync(0, 6), 2);
  EXPECT_EQ(s.since_sync(0, 8), 0);
}

// H = 8, F = 4: offsets 0, 2, 4, 6, so some fragment syncs every 2 steps,
// each every 8.
TEST(DilocoSchedule, StreamingFragmentsSyncAtStaggeredSteps) {
  const SyncSchedule s(8, 4);
  EXPECT_EQ(s.offset(0), 0);
  EXPECT_EQ(s.offset(1), 2);
  EXPECT_EQ(s.offset(2), 4);
  EXPECT_EQ(s.offset(3), 6);
  std::vector<std::vector<int>> due;
  for (int64_t done = 1; done <= 16; ++done) due.push_back(s.due(done));
  const std::vector<std::vector<int>> expected = {{}, {1}, {}, {2}, {}, {3}, {}, {0},
                                                  {}, {1}, {}, {2}, {}, {3}, {}, {0}};
  EXPECT_EQ(due, expected);
  EXPECT_TRUE(s.due(0).empty());
  // H not a multiple of F: offsets floor(f * H / F).
  const SyncSchedule odd(5, 2);
  EXPECT_EQ(odd.offset(1), 2);
  EXPECT_EQ(odd.due(2), (std::vector<int>{1}));
  EXPECT_EQ(odd.due(7), (std::vector<int>{1}));
  EXPECT_EQ(odd.due(5), (std::vector<int>{0}));
}

TEST(DilocoSchedule, LayersSplitIntoContiguousFragments) {
  std::vector<int> of;
  for (int64_t layer = 0; layer < 8; ++layer)
    of.push_back(SyncSchedule::fragment_of_layer(layer, 8, 4));
  EXPECT_EQ(of, (std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3}));
  of.clear();
  for (int64_t layer = 0; layer < 5; ++layer)
    of.push_back(SyncSchedule::fragment_of_layer(layer, 5, 2));
  EXPECT_EQ(of, (std::vector<int>{0, 0, 0, 1, 1}));
}

TEST(DilocoSchedule, RefusesBadSettings) {
  EXPECT_THROW(SyncSchedule(0, 1), std::invalid_argument);
  EXPECT_THROW(SyncSchedule(4, 0), std::invalid_argument);
  EXPECT_THROW(SyncSchedule(4, 5), std::invalid_argument);
}

}  // namespace
}  // namespace cmpi::parallel
