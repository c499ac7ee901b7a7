// model.kind resnet: its keys load and round-trip, the data kind follows the
// model, and every setting it cannot run is refused at the key at fault.
#include <string>

#include <gtest/gtest.h>

#include "config/config_loader.h"
#include "tests/config/config_test_support.h"

namespace cmpi::config {
namespace {

using namespace config_testing;

const std::string kResnet =
    "model:\n  kind: resnet\n  depth: 20\n  width: 8\n  image_size: 32\n  channels: 1\n"
    "  classes: 7\n";

TEST_F(ConfigTest, ResnetKeysLoadAndRoundTrip) {
  const Config c = load_checked_config(write(kResnet + "data:\n  noise: 0.25\n"));
  EXPECT_STREQ(config::name_of(c.model.kind), "resnet");
  EXPECT_EQ(c.model.depth, 20);
  EXPECT_EQ(c.model.width, 8);
  EXPECT_EQ(c.model.image_size, 32);
  EXPECT_EQ(c.model.channels, 1);
  EXPECT_EQ(c.model.classes, 7);
  EXPECT_STREQ(config::name_of(c.data.kind), "images")
      << "a ResNet's data defaults to the synthetic images";
  EXPECT_EQ(c.data.noise, 0.25);
  const Config again = parse_checked_config(to_yaml(c), "resolved.yaml");
  EXPECT_STREQ(config::name_of(again.model.kind), "resnet");
  EXPECT_EQ(again.model.depth, 20);
  EXPECT_EQ(again.model.classes, 7);
  EXPECT_STREQ(config::name_of(again.data.kind), "images");
  EXPECT_EQ(again.data.noise, 0.25);
  EXPECT_EQ(again.model.activation, "relu") << "ReLU stays the default";
  const Config silu = load_checked_config(write(kResnet + "  activation: silu\n"));
  EXPECT_EQ(silu.model.activation, "silu");
  EXPECT_EQ(parse_checked_config(to_yaml(silu), "resolved.yaml").model.activation, "silu");
}

TEST_F(ConfigTest, GptStaysTheDefault) {
  const Config c = load_checked_config(write("{}"));
  EXPECT_STREQ(config::name_of(c.model.kind), "gpt");
  EXPECT_STREQ(config::name_of(c.data.kind), "markov");
}

TEST_F(ConfigTest, ResnetStagesCountItsLayers) {
  // depth 20: stem, 6 blocks, head = 8 layers.
  const Config c =
      load_checked_config(write(kResnet + "parallel:\n  pipeline: 2\n  stage_layers: [5, 3]\n"));
  EXPECT_EQ(c.parallel.stage_layers, (std::vector<int64_t>{5, 3}));
  const std::string text = kResnet + "parallel:\n  pipeline: 2\n  stage_layers: [5, 2]\n";
  const std::string message = error_of([&] { load_checked_config(write(text)); });
  EXPECT_CONTAINS(message, "parallel.stage_layers");
  EXPECT_CONTAINS(message, "the ResNet has 8");
  EXPECT_CONTAINS(message, "model.depth 20 makes 8 layers");
}

TEST_F(ConfigTest, ResnetErrorsNameTheKey) {
  struct Case {
    std::string yaml, key, words;
  };
  const Case cases[] = {
      {"model:\n  kind: resnet\n  depth: 21\n", "model.depth", "9n + 2"},
      {"model:\n  kind: resnet\n  image_size: 2\n", "model.image_size", ">= 4"},
      {"model:\n  kind: resnet\n  classes: 1\n", "model.classes", ">= 2"},
      {"model:\n  kind: cnn\n", "model.kind", "resnet"},
      {kResnet + "  activation: tanh\n", "model.activation", "silu"},
      {kResnet + "data:\n  kind: markov\n", "data.kind", "images"},
      {"data:\n  kind: images\n", "data.kind", "model.kind resnet"},
      {kResnet + "parallel:\n  tensor: 2\n", "parallel.tensor", "tensor-parallel"},
      {kResnet + "parallel:\n  spatial: 2\n  spatial_slicing: square\n", "parallel.spatial_slicing",
       "square number"},
      // depth 20 on 32 pixels: the last group runs on 8 x 8, fewer than 16 tiles.
      {kResnet + "parallel:\n  spatial: 16\n", "parallel.spatial", "model.image_size 32"},
      {kResnet + "parallel:\n  spatial: 16\n", "parallel.spatial", "layer 5 (bottleneck) conv2"},
      {kResnet + "parallel:\n  spatial: 2\n  zero_stage: 2\n", "parallel.zero_stage",
       "ZeRO stages 0 and 1"},
      {kResnet + "parallel:\n  spatial: 2\n  pipeline: 2\n  spatial_stages: 3\n",
       "parallel.spatial_stages", "cannot exceed parallel.pipeline"},
      {"parallel:\n  spatial: 2\n", "parallel.spatial", "a GPT needs spatial: 1"},
      {kResnet + "data:\n  noise: -1\n", "data.noise", ">= 0"},
      {kResnet + "parallel:\n  pipeline: 9\n", "parallel.pipeline", "layers"},
      {"parallel:\n  pipeline: 2\n  bidirectional: true\n", "parallel.bidirectional",
       "resnet only"},
      {kResnet + "parallel:\n  bidirectional: true\n", "parallel.bidirectional",
       "parallel.pipeline >= 2"},
      {kResnet + "parallel:\n  pipeline: 2\n  zero_stage: 2\n  bidirectional: true\n",
       "parallel.zero_stage", "stages 0 and 1"},
      {kResnet + "parallel:\n  pipeline: 2\n  pipeline_balance: auto\n",
       "parallel.pipeline_balance", "takes uniform or a list"},
  };
  for (const Case& c : cases) {
    const std::string path = write(c.yaml);
    const std::string message = error_of([&] { load_checked_config(path); });
    EXPECT_CONTAINS(message, c.key);
    EXPECT_CONTAINS(message, c.words);
    EXPECT_CONTAINS(message, "run.yaml") << "the file is named";
  }
}

TEST_F(ConfigTest, SpatialKeysLoadAndRoundTrip) {
  // 32 pixels over 3 slabs: uneven tiles (11, 11, 10) are fine.
  const Config c = load_checked_config(
      write(kResnet + "parallel:\n  spatial: 3\n  pipeline: 2\n  spatial_slicing: horizontal\n"
                      "  spatial_stages: 1\n"));
  EXPECT_EQ(c.parallel.spatial, 3);
  EXPECT_EQ(c.parallel.spatial_slicing, "horizontal");
  EXPECT_EQ(c.parallel.spatial_stages, 1);
  const Config again = parse_checked_config(to_yaml(c), "resolved.yaml");
  EXPECT_EQ(again.parallel.spatial_slicing, "horizontal");
  EXPECT_EQ(again.parallel.spatial_stages, 1);
  const Config square = load_checked_config(write(kResnet + "parallel:\n  spatial: 4\n  "
                                                            "spatial_slicing: square\n"));
  EXPECT_EQ(validate_layout(square, 4).sp, 4);
  const std::string message = error_of(
      [&] { load_checked_config(write(kResnet + "parallel:\n  spatial_slicing: diagonal\n")); });
  EXPECT_CONTAINS(message, "parallel.spatial_slicing");
}

TEST_F(ConfigTest, BidirectionalNeedsAnEvenMicroBatchCount) {
  const Config c =
      load_checked_config(write(kResnet + "parallel:\n  pipeline: 2\n  bidirectional: true\n"
                                          "training:\n  global_batch: 48\n  micro_batch: 8\n"));
  EXPECT_TRUE(c.parallel.bidirectional);
  EXPECT_TRUE(parse_checked_config(to_yaml(c), "resolved.yaml").parallel.bidirectional);
  EXPECT_EQ(validate_layout(c, 2).pp, 2) << "6 micro-batches: 3 per replica";
  const std::string message = error_of([&] { validate_layout(c, 4); });
  EXPECT_CONTAINS(message, "training.global_batch");
  EXPECT_CONTAINS(message, "3 micro-batches");
  EXPECT_CONTAINS(message, "even");
}

}  // namespace
}  // namespace cmpi::config
