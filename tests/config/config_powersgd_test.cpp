// powersgd policy rules: read with their settings, and every place they
// cannot apply refused with the rule, key, file and line.
#include <string>

#include <gtest/gtest.h>

#include "comm/powersgd_settings.h"
#include "config/config_loader.h"
#include "tests/config/config_test_support.h"

namespace cmpi::config {
namespace {

using namespace config_testing;

const std::string kRule =
    "compression:\n  rules:\n    - match: {group: dp, op: allreduce, role: gradient}\n"
    "      codec: {name: powersgd, rank: 2, start_step: 3, warm_start: false}\n";

TEST_F(ConfigTest, PowerSgdRuleIsReadWithItsSettings) {
  const comm::PolicyConfig p = load_checked_config(write(kRule)).compression;
  ASSERT_EQ(p.rules.size(), 1u);
  ASSERT_TRUE(p.rules[0].codec.has_value());
  ASSERT_TRUE(comm::is_powersgd(*p.rules[0].codec));
  const comm::PowerSgdSettings s = comm::parse_powersgd_settings(*p.rules[0].codec);
  EXPECT_EQ(s.rank, 2);
  EXPECT_EQ(s.start_step, 3);
  EXPECT_FALSE(s.warm_start);
  const comm::PowerSgdSettings defaults =
      comm::parse_powersgd_settings(compress::CodecSpec("powersgd"));
  EXPECT_EQ(defaults.rank, 4);
  EXPECT_EQ(defaults.start_step, 0);
  EXPECT_TRUE(defaults.warm_start);
  EXPECT_TRUE(defaults.error_feedback);
  EXPECT_TRUE(defaults.raw_embeddings);
  const comm::PowerSgdSettings plain = comm::parse_powersgd_settings(
      compress::CodecSpec("powersgd", {{"error_feedback", "false"}, {"raw_embeddings", "false"}}));
  EXPECT_FALSE(plain.error_feedback);
  EXPECT_FALSE(plain.raw_embeddings);
  // The resolved config (--print-config writes error_feedback: false) reads back.
  EXPECT_NO_THROW(load_checked_config(write(kRule + "      error_feedback: false\n")));
}

TEST_F(ConfigTest, BadPowerSgdRulesNameTheRuleKeyFileAndLine) {
  const std::string head = "compression:\n  rules:\n";
  struct Case {
    std::string rule, needle, key, detail;
  } cases[] = {
      {"    - match: {group: [dp, tp], op: allreduce, role: gradient}\n"
       "      codec: {name: powersgd}\n",
       "- match", "compression.rules[0].match", "must match `group: dp` only"},
      {"    - match: {group: dp, role: gradient}\n      codec: {name: powersgd}\n", "- match",
       "compression.rules[0].match", "must match `op: allreduce` only"},
      {"    - match: {group: dp, op: allreduce}\n      codec: {name: powersgd}\n", "- match",
       "compression.rules[0].match", "must match `role: gradient` only"},
      {"    - match: {group: dp, op: allreduce, role: gradient}\n"
       "      codec: {name: powersgd, rank: 0}\n",
       "rank: 0", "compression.rules[0].codec", "'rank' must lie in [1, 1024], got 0"},
      {"    - match: {group: dp, op: allreduce, role: gradient}\n"
       "      codec: {name: powersgd, ranks: 4}\n",
       "ranks: 4", "compression.rules[0].codec", "parameter 'ranks' is unknown"},
      {"    - match: {group: dp, op: allreduce, role: gradient}\n"
       "      codec: {name: powersgd, start_step: -1}\n",
       "start_step", "compression.rules[0].codec", "'start_step' must be >= 0"},
      {"    - match: {group: dp, op: allreduce, role: gradient}\n"
       "      codec: {name: powersgd}\n      error_feedback: true\n",
       "error_feedback", "compression.rules[0].error_feedback", "keeps its own error feedback"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.rule);
    expect_error_at(head + c.rule, c.needle, c.key, c.detail);
  }
}

TEST_F(ConfigTest, PowerSgdRefusesZeroStage2And3ButNotCheckpoints) {
  for (int stage : {2, 3}) {
    const std::string text = "parallel:\n  zero_stage: " + std::to_string(stage) + "\n" + kRule;
    expect_error_at(text, "zero_stage", "parallel.zero_stage", "uses powersgd");
    expect_error_at(text, "zero_stage", "parallel.zero_stage", "reduce-scatters the gradients");
  }
  const std::string path = write("parallel:\n  zero_stage: 3\n" + kRule);
  EXPECT_CONTAINS(error_of([&] { load_checked_config(path); }), path + ":5");  // names the rule
  // Checkpoints hold PowerSGD's state (checkpoint_reshard_mpi_test.cpp).
  EXPECT_NO_THROW(load_checked_config(write("checkpoint:\n  every: 10\n" + kRule)));
  // Stages 0 and 1 keep the gradient allreduce.
  EXPECT_NO_THROW(load_checked_config(write("parallel:\n  zero_stage: 1\n" + kRule)));
}

}  // namespace
}  // namespace cmpi::config
