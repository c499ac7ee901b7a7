// How preset auto's decisions reach the user (trainer/auto_report.h): a
// trial's verdict earns a line even when the route stays, and the line names
// the demoted route and why; metrics.jsonl carries the steps multiplier, the
// fastest candidate, the verdict and the demoted candidates.
#include "trainer/auto_report.h"

#include <gtest/gtest.h>

namespace cmpi::trainer {
namespace {

comm::AutoDecision zfp_kept() {
  comm::AutoDecision d;
  d.group = comm::GroupKind::kDp;
  d.op = comm::Op::kAllreduce;
  d.role = comm::Role::kGradient;
  d.codec = d.previous_codec = "zfp:mode=rate,rate=8 + error feedback";
  d.reason = "fastest";
  d.fastest = d.codec;
  d.steps_multiplier = 1.25;
  return d;
}

TEST(AutoReport, RouteChangesAndVerdictsEarnALine) {
  comm::AutoDecision d = zfp_kept();
  EXPECT_FALSE(worth_a_line(d));
  d.changed = true;
  EXPECT_TRUE(worth_a_line(d));

  comm::AutoDecision demotion = zfp_kept();
  demotion.verdict =
      "demoted sign:bucket=512: loss fell 9.4 %/step under it against 28 %/step under trusted "
      "routes after (steps 7-11; before 2-6, after 12-16)";
  demotion.reason = "fastest; " + demotion.verdict;
  demotion.demoted = {"sign:bucket=512"};
  ASSERT_TRUE(worth_a_line(demotion));
  const std::string line = auto_change_line(17, demotion);
  EXPECT_EQ(line.rfind("auto: step 17 dp allreduce gradient (inter): ", 0), 0u) << line;
  EXPECT_NE(line.find("demoted sign:bucket=512: loss fell 9.4 %/step under it against 28 %/step"),
            std::string::npos)
      << line;
  EXPECT_EQ(line.back(), ')') << "the whole reason fits: " << line;
}

TEST(AutoReport, JsonCarriesTheConvergenceFields) {
  comm::AutoDecision d = zfp_kept();
  d.fastest = "sign:bucket=512";
  std::string json = auto_decisions_json({d}, 0.5);
  EXPECT_NE(json.find("\"steps_multiplier\":1.25"), std::string::npos) << json;
  EXPECT_NE(json.find("\"fastest\":\"sign:bucket=512\""), std::string::npos) << json;
  EXPECT_EQ(json.find("\"verdict\""), std::string::npos) << "only at a verdict: " << json;
  EXPECT_EQ(json.find("\"demoted\""), std::string::npos) << "only when some are: " << json;

  d.verdict = "demoted sign:bucket=512: loss fell 1 %/step";
  d.demoted = {"sign:bucket=512", "topk:ratio=0.001"};
  json = auto_decisions_json({d}, 0.5);
  EXPECT_NE(json.find("\"verdict\":\"demoted sign:bucket=512: loss fell 1 %/step\""),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"demoted\":[\"sign:bucket=512\",\"topk:ratio=0.001\"]"), std::string::npos)
      << json;
}

}  // namespace
}  // namespace cmpi::trainer
