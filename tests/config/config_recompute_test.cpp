// training.recompute and training.recompute_layers: defaults, accepted
// values, the errors for bad ones (naming the key, file and line) and the
// to_yaml round trip.
#include <gtest/gtest.h>

#include <string>

#include "config/config_loader.h"
#include "tests/config/config_test_support.h"

namespace cmpi::config {
namespace {

using namespace config_testing;
using RecomputeConfigTest = ConfigTest;

TEST_F(RecomputeConfigTest, DefaultsKeepEveryActivation) {
  const Config c = load_checked_config(write("{}"));
  EXPECT_EQ(c.training.recompute, "none");
  EXPECT_EQ(c.training.recompute_layers, 0);
}

TEST_F(RecomputeConfigTest, ReadsModesAndLayersAndWritesThemBack) {
  const Config c =
      load_checked_config(write("training:\n  recompute: full\n  recompute_layers: 3\n"));
  EXPECT_EQ(c.training.recompute, "full");
  EXPECT_EQ(c.training.recompute_layers, 3);
  const Config reloaded = load_checked_config(write(to_yaml(c), "resolved.yaml"));
  EXPECT_EQ(reloaded.training.recompute, "full");
  EXPECT_EQ(reloaded.training.recompute_layers, 3);
  EXPECT_EQ(load_checked_config(write("{}"), {"training.recompute=selective"}).training.recompute,
            "selective");
}

TEST_F(RecomputeConfigTest, UnknownModeNamesTheKeyTheLineAndTheChoices) {
  const std::string message = load_error("training:\n  recompute: all\n");
  const std::string path = (dir_ / "run.yaml").string();
  EXPECT_EQ(message.rfind(path + ":2: training.recompute: ", 0), 0u) << message;
  EXPECT_NE(message.find("expected one of none, selective, full"), std::string::npos) << message;
}

TEST_F(RecomputeConfigTest, LayersNeedFullRecomputation) {
  const std::string message =
      load_error("training:\n  recompute: selective\n  recompute_layers: 2\n");
  EXPECT_NE(message.find("training.recompute_layers"), std::string::npos) << message;
  EXPECT_NE(message.find("needs training.recompute: full"), std::string::npos) << message;
  const std::string negative = load_error("training:\n  recompute_layers: -1\n");
  EXPECT_NE(negative.find("training.recompute_layers"), std::string::npos) << negative;
}

TEST_F(RecomputeConfigTest, ResnetTakesFullButRefusesSelective) {
  const std::string message = load_error(
      "model:\n  kind: resnet\ndata:\n  kind: images\ntraining:\n  recompute: selective\n");
  EXPECT_NE(message.find("training.recompute"), std::string::npos) << message;
  EXPECT_NE(message.find("no attention core"), std::string::npos) << message;
  const Config c = load_checked_config(
      write("model:\n  kind: resnet\ndata:\n  kind: images\ntraining:\n  recompute: full\n"));
  EXPECT_EQ(c.training.recompute, "full");
}

}  // namespace
}  // namespace cmpi::config
