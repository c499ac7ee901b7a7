// What a user reads about non-finite values, without an MPI job: metrics
// lines stay valid JSON (null plus a "nonfinite" list) and the message of a
// non-finite step names the step, the ranks with their coordinates, the loss
// or the parameter, and whether it came from a rank's own backward or only
// after the reduction over dp.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "trainer/metrics.h"
#include "trainer/nonfinite_guard.h"

namespace cmpi::trainer {
namespace {

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "text: " << (haystack)

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(MetricsJson, NonFiniteLossAndNormAreNullAndNamed) {
  StepRecord r;
  r.step = 3;
  r.total_steps = 10;
  r.loss = kNaN;
  r.grad_norm = -kInf;
  r.skipped = true;
  r.skipped_steps = 2;
  const std::string json = MetricsLog::to_json(r);
  EXPECT_CONTAINS(json, "\"loss\":null");
  EXPECT_CONTAINS(json, "\"grad_norm\":null");
  EXPECT_CONTAINS(json, "\"nonfinite\":[\"loss\",\"grad_norm\"]");
  EXPECT_CONTAINS(json, "\"skipped\":true,\"skipped_steps\":2");
  EXPECT_EQ(json.find("nan"), std::string::npos) << json;
  EXPECT_EQ(json.find("inf"), std::string::npos) << json;
  EXPECT_CONTAINS(MetricsLog::progress_line(r), "SKIPPED");

  r.loss = 2.5;
  r.grad_norm = 0.75;
  r.skipped = false;
  const std::string finite = MetricsLog::to_json(r);
  EXPECT_CONTAINS(finite, "\"loss\":2.5,");
  EXPECT_CONTAINS(finite, "\"grad_norm\":0.75,");
  EXPECT_CONTAINS(finite, "\"skipped\":false");
  EXPECT_EQ(finite.find("nonfinite"), std::string::npos) << finite;
}

RankHealth rank(int world_rank, int dp, int tp, int pp) {
  RankHealth h;
  h.world_rank = world_rank;
  h.coord.dp = dp;
  h.coord.tp = tp;
  h.coord.pp = pp;
  h.update_skipped = true;
  return h;
}

TEST(NonfiniteMessage, NamesLossRanksAndTheParameterOfTheOwnBackward) {
  std::vector<RankHealth> ranks = {rank(0, 0, 0, 0), rank(1, 0, 0, 1), rank(2, 1, 0, 0),
                                   rank(3, 1, 0, 1)};
  ranks[1].computed_loss = ranks[3].computed_loss = true;  // pp = 2: the last stage's
  ranks[1].loss = 1.5;
  ranks[3].loss = kNaN;
  ranks[3].own_param = "blocks.1.mlp.fc_in.weight";
  ranks[2].reduced_param = ranks[3].reduced_param = "blocks.1.mlp.fc_in.weight";
  const std::string m = describe_nonfinite_step(7, -kNaN, ranks);  // printed "nan", not "-nan"
  EXPECT_EQ(m.rfind("step 7:", 0), 0u) << m;
  EXPECT_CONTAINS(m, "the loss went non-finite (nan) on world rank 3 (dp 1, tp 0, pp 1);");
  EXPECT_EQ(m.find("world rank 1 "), std::string::npos) << "rank 1's loss was finite: " << m;
  EXPECT_CONTAINS(m,
                  "the gradients went non-finite (global norm nan): the first non-finite "
                  "gradient is blocks.1.mlp.fc_in.weight from the own backward of world rank "
                  "3 (dp 1, tp 0, pp 1);");
  EXPECT_CONTAINS(m, "the step's update was not applied");
}

TEST(NonfiniteMessage, SaysWhenOnlyTheReducedGradientOrTheNormWentNonFinite) {
  std::vector<RankHealth> ranks = {rank(0, 0, 0, 0), rank(1, 1, 0, 0)};
  ranks[0].reduced_param = ranks[1].reduced_param = "lm_head.weight";
  const std::string reduced = describe_nonfinite_step(2, kInf, ranks);
  EXPECT_CONTAINS(reduced, "global norm inf");
  EXPECT_CONTAINS(reduced,
                  "no rank's own gradient was; the first non-finite gradient is "
                  "lm_head.weight after the reduction over dp, on world rank 0 (dp 0, "
                  "tp 0, pp 0), world rank 1 (dp 1, tp 0, pp 0);");
  EXPECT_EQ(reduced.find("loss"), std::string::npos) << reduced;

  ranks[0].reduced_param = ranks[1].reduced_param = "";
  EXPECT_CONTAINS(describe_nonfinite_step(2, kInf, ranks), "sum of squares overflowed");
}

TEST(NonfiniteMessage, ListsAtMostFourRanksAndCountsTheRest) {
  std::vector<RankHealth> ranks;
  for (int r = 0; r < 6; ++r) {
    ranks.push_back(rank(r, r, 0, 0));
    ranks.back().computed_loss = true;
    ranks.back().loss = kNaN;
  }
  const std::string m = describe_nonfinite_step(1, kNaN, ranks);
  EXPECT_CONTAINS(m, "world rank 3 (dp 3, tp 0, pp 0) and 2 more;");
  EXPECT_EQ(m.find("world rank 4"), std::string::npos) << m;
}

TEST(NonfiniteMessage, GroupsRanksByParameter) {
  std::vector<RankHealth> ranks = {rank(0, 0, 0, 0), rank(1, 0, 1, 0), rank(2, 1, 0, 0)};
  ranks[0].own_param = ranks[2].own_param = "token_embedding.weight";
  ranks[1].own_param = "blocks.0.attn.qkv.weight";
  EXPECT_CONTAINS(describe_nonfinite_step(5, kNaN, ranks),
                  "token_embedding.weight from the own backward of world rank 0 (dp 0, tp 0, pp "
                  "0), world rank 2 (dp 1, tp 0, pp 0); blocks.0.attn.qkv.weight from the own "
                  "backward of world rank 1 (dp 0, tp 1, pp 0);");
}

TEST(NonfiniteMessage, AFiniteGradientMeansTheUpdateWasApplied) {
  std::vector<RankHealth> ranks = {rank(0, 0, 0, 0)};
  ranks[0].update_skipped = false;
  ranks[0].computed_loss = true;
  ranks[0].loss = kInf;
  const std::string m = describe_nonfinite_step(4, 0.5, ranks);
  EXPECT_CONTAINS(m, "the loss went non-finite (inf) on world rank 0");
  EXPECT_CONTAINS(m, "so the step's update was applied");
}

}  // namespace
}  // namespace cmpi::trainer
