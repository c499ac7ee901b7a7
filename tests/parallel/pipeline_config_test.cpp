// The pipeline keys of a run's config: parallel.pipeline_balance read as
// `uniform`, `auto` or a list, and its older spelling parallel.stage_layers
// as `balanced` or a list (one of the two at most), checked against
// parallel.pipeline and model.layers with errors naming the key and where it
// was written, and written back by to_yaml so that it reloads to the same
// split.
#include <gtest/gtest.h>

#include <string>

#include "config/config_loader.h"
#include "launch/checked_config.h"

namespace cmpi::trainer {
namespace {

const std::string kBase =
    "model: {layers: 5, hidden: 32, heads: 4}\n"
    "training: {global_batch: 8, micro_batch: 2}\n";

config::Config parse(const std::string& parallel_section,
                     const std::vector<std::string>& overrides = {}) {
  return launch::parse_checked_config(kBase + parallel_section, "pp.yaml", overrides);
}

std::string error_of(const std::string& parallel_section,
                     const std::vector<std::string>& overrides = {}) {
  try {
    parse(parallel_section, overrides);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "message: " << (haystack)

TEST(PipelineConfig, StageLayersDefaultToBalanced) {
  EXPECT_TRUE(parse("parallel: {pipeline: 2}\n").parallel.stage_layers.empty());
  EXPECT_TRUE(
      parse("parallel: {pipeline: 2, stage_layers: balanced}\n").parallel.stage_layers.empty());
}

TEST(PipelineConfig, StageLayersReadAsListAndFromOverrides) {
  const auto written = parse("parallel:\n  pipeline: 2\n  stage_layers: [4, 1]\n");
  EXPECT_EQ(written.parallel.stage_layers, (std::vector<int64_t>{4, 1}));
  const auto overridden =
      parse("parallel: {pipeline: 4}\n", {"parallel.stage_layers=[2, 1, 1, 1]"});
  EXPECT_EQ(overridden.parallel.stage_layers, (std::vector<int64_t>{2, 1, 1, 1}));
}

TEST(PipelineConfig, BadStageLayersNameTheKeyAndLine) {
  const auto wrong_sum = error_of("parallel:\n  pipeline: 2\n  stage_layers: [3, 1]\n");
  EXPECT_EQ(wrong_sum.rfind("pp.yaml:5: parallel.stage_layers:", 0), 0u) << wrong_sum;
  EXPECT_CONTAINS(wrong_sum, "sum to 4, model.layers is 5");

  const auto wrong_length = error_of("parallel:\n  pipeline: 2\n  stage_layers: [1, 1, 3]\n");
  EXPECT_EQ(wrong_length.rfind("pp.yaml:5: parallel.stage_layers:", 0), 0u) << wrong_length;
  EXPECT_CONTAINS(wrong_length, "lists 3 stages, parallel.pipeline is 2");

  const auto empty_stage = error_of("parallel:\n  pipeline: 2\n  stage_layers: [5, 0]\n");
  EXPECT_CONTAINS(empty_stage, "pp.yaml:5");
  EXPECT_CONTAINS(empty_stage, "parallel.stage_layers");
  EXPECT_CONTAINS(empty_stage, ">= 1, got '0'");

  EXPECT_CONTAINS(error_of("parallel: {pipeline: 2, stage_layers: [4, x]}\n"), "got 'x'");
  EXPECT_CONTAINS(error_of("parallel: {pipeline: 2, stage_layers: even}\n"),
                  "parallel.stage_layers: expected `balanced` or a list");
  EXPECT_CONTAINS(error_of("parallel: {pipeline: 2}\n", {"parallel.stage_layers=[1, 1]"}),
                  "--set parallel.stage_layers=[1, 1]");
}

TEST(PipelineConfig, StageLayersSurviveTheResolvedConfig) {
  for (const std::string section :
       {"parallel: {pipeline: 2, stage_layers: [2, 3]}\n", "parallel: {pipeline: 2}\n",
        "parallel: {pipeline: 2, pipeline_balance: auto}\n",
        "parallel: {pipeline: 2, pipeline_balance: [4, 1]}\n"}) {
    const config::Config first = parse(section);
    const config::Config again =
        launch::parse_checked_config(config::to_yaml(first), "resolved.yaml");
    EXPECT_EQ(again.parallel.stage_layers, first.parallel.stage_layers) << config::to_yaml(first);
    EXPECT_EQ(again.parallel.pipeline_balance, first.parallel.pipeline_balance)
        << config::to_yaml(first);
  }
}

TEST(PipelineConfig, PipelineBalanceReadsUniformAutoOrAList) {
  EXPECT_EQ(parse("parallel: {pipeline: 2}\n").parallel.pipeline_balance, "uniform");
  const auto automatic = parse("parallel: {pipeline: 2, pipeline_balance: auto}\n");
  EXPECT_EQ(automatic.parallel.pipeline_balance, "auto");
  EXPECT_TRUE(automatic.parallel.stage_layers.empty());
  EXPECT_EQ(parse("parallel: {pipeline: 2, pipeline_balance: uniform}\n").parallel.pipeline_balance,
            "uniform");
  EXPECT_EQ(parse("parallel: {pipeline: 2, pipeline_balance: [1, 4]}\n").parallel.stage_layers,
            (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(parse("parallel: {pipeline: 2}\n", {"parallel.pipeline_balance=auto"})
                .parallel.pipeline_balance,
            "auto");

  const auto wrong_sum = error_of("parallel:\n  pipeline: 2\n  pipeline_balance: [3, 1]\n");
  EXPECT_EQ(wrong_sum.rfind("pp.yaml:5: parallel.pipeline_balance:", 0), 0u) << wrong_sum;
  EXPECT_CONTAINS(error_of("parallel: {pipeline: 2, pipeline_balance: balanced}\n"),
                  "parallel.pipeline_balance: expected `uniform`, `auto` or a list");
  EXPECT_CONTAINS(
      error_of("parallel: {pipeline: 2, pipeline_balance: auto, stage_layers: [4, 1]}\n"),
      "give the split once");
}

}  // namespace
}  // namespace cmpi::trainer
