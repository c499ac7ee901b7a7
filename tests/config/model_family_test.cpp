// The model-family registry and the config's enums: every family the parser
// accepts has a registered spec with its checks and shapes, every enum value
// reads back from its spelling, and the registry answers the questions the
// trainer, the checks and the planner ask instead of comparing model.kind.
#include <gtest/gtest.h>

#include <string>

#include "config/config.h"
#include "config/config_enums.h"
#include "config/config_loader.h"
#include "config/yaml_reader.h"
#include "models/family/model_family.h"

namespace cmpi::models {
namespace {

template <class Enum, size_t N>
void expect_spellings_round_trip(const config::EnumSpelling<Enum> (&spellings)[N]) {
  for (const auto& s : spellings) {
    EXPECT_STREQ(config::name_of(s.value), s.name);
    EXPECT_EQ(config::value_named(s.name, spellings, "key"), s.value) << s.name;
  }
}

TEST(ConfigEnums, EverySpellingReadsBackToItsValue) {
  expect_spellings_round_trip(config::kModelFamilySpellings);
  expect_spellings_round_trip(config::kPrecisionSpellings);
  expect_spellings_round_trip(config::kPipelineScheduleSpellings);
  expect_spellings_round_trip(config::kDataKindSpellings);
}

TEST(ConfigEnums, UnknownSpellingNamesTheKeyAndTheChoices) {
  try {
    config::precision_named("fp8");
    FAIL() << "fp8 is not a training.precision";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "training.precision: unknown 'fp8' (known: fp32, bf16, fp16)");
  }
}

TEST(ConfigEnums, ParsedConfigHoldsTheEnumAndWritesTheSpellingBack) {
  const config::Config c = config::parse_config(
      "model: {kind: resnet}\ntraining: {precision: fp32}\nparallel: {schedule: gpipe}\n",
      "enums.yaml");
  EXPECT_EQ(c.model.kind, config::ModelFamily::kResnet);
  EXPECT_EQ(c.parallel.schedule, config::PipelineSchedule::kGpipe);
  EXPECT_EQ(c.data.kind, config::DataKind::kImages) << "a ResNet's data defaults to images";
  const std::string yaml = config::to_yaml(c);
  EXPECT_NE(yaml.find("kind: resnet"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("schedule: gpipe"), std::string::npos) << yaml;
}

TEST(ModelFamilyRegistry, EveryParsableFamilyIsRegisteredWithItsQuestions) {
  const ModelFamilyRegistry registry = ModelFamilyRegistry::with_builtin_families();
  for (const auto& s : config::kModelFamilySpellings) {
    SCOPED_TRACE(s.name);
    const ModelFamilySpec& spec = registry.at(s.value);
    EXPECT_EQ(spec.id, s.value);
    EXPECT_TRUE(spec.validate);
    EXPECT_TRUE(spec.layout_shape);
    EXPECT_TRUE(spec.checkpoint_shape);
  }
}

TEST(ModelFamilyRegistry, AnswersDifferByFamily) {
  config::ModelConfig gpt;
  config::ModelConfig resnet;
  resnet.kind = config::ModelFamily::kResnet;
  EXPECT_TRUE(family_of(gpt).reads_tokens);
  EXPECT_FALSE(family_of(resnet).reads_tokens);
  EXPECT_TRUE(family_of(gpt).estimate_stage_memory) << "the GPT has a memory estimate";
  EXPECT_FALSE(family_of(resnet).estimate_stage_memory);
  EXPECT_EQ(checkpoint_shape(gpt).count("vocab_size"), 1u);
  EXPECT_EQ(checkpoint_shape(resnet).count("depth"), 1u);
  EXPECT_EQ(checkpoint_shape(resnet).count("vocab_size"), 0u);
  resnet.depth = 29;  // 3 groups of 3 bottlenecks + stem + head
  EXPECT_EQ(family_of(resnet).layout_shape(resnet).layers, 11);
  EXPECT_EQ(family_of(gpt).layout_shape(gpt).layers, gpt.layers);
}

TEST(ModelFamilyRegistry, ARegistrationReplacesThatFamilyOnlyAndAMissingOneIsABuildError) {
  ModelFamilyRegistry registry;
  EXPECT_THROW(registry.at(config::ModelFamily::kGpt), std::logic_error);
  registry = ModelFamilyRegistry::with_builtin_families();
  ModelFamilySpec toy = registry.at(config::ModelFamily::kResnet);
  toy.reads_tokens = true;
  registry.add(toy);
  EXPECT_TRUE(registry.at(config::ModelFamily::kResnet).reads_tokens);
  EXPECT_TRUE(registry.at(config::ModelFamily::kGpt).reads_tokens);
}

TEST(ModelFamilyRegistry, FamilyChecksReportAtTheKey) {
  config::Config c = config::parse_config("model: {kind: resnet}\n", "family.yaml");
  c.training.precision = config::Precision::kBf16;
  try {
    family_of(c.model).validate(c);
    FAIL() << "a ResNet trains in fp32 only";
  } catch (const config::ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("family.yaml: training.precision: ", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace cmpi::models
