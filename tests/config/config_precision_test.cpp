// training.precision and the fp16 loss-scaling keys: defaults (GPT-NeoX-20B's
// initial scale 2^12), accepted values, errors naming key, file and line, the
// checks between keys and against model.kind resnet.
#include <string>

#include <gtest/gtest.h>

#include "config/config_loader.h"
#include "tests/config/config_test_support.h"

namespace cmpi::config {
namespace {

using namespace config_testing;
using PrecisionConfigTest = ConfigTest;

TEST_F(PrecisionConfigTest, DefaultsAreFloat32AndNeox20bsLossScaling) {
  const Config c = load_checked_config(write("{}"));
  EXPECT_STREQ(config::name_of(c.training.precision), "fp32");
  EXPECT_EQ(c.training.loss_scale_initial, 4096);
  EXPECT_EQ(c.training.loss_scale_growth_interval, 1000);
  EXPECT_EQ(c.training.loss_scale_backoff, 0.5);
  EXPECT_EQ(c.training.loss_scale_min, 1);
}

TEST_F(PrecisionConfigTest, ReadsEveryKey) {
  const Config c =
      load_checked_config(write("training:\n  precision: fp16\n  loss_scale_initial: 65536\n"
                                "  loss_scale_growth_interval: 50\n  loss_scale_backoff: 0.25\n"
                                "  loss_scale_min: 2\n"));
  EXPECT_STREQ(config::name_of(c.training.precision), "fp16");
  EXPECT_EQ(c.training.loss_scale_initial, 65536);
  EXPECT_EQ(c.training.loss_scale_growth_interval, 50);
  EXPECT_EQ(c.training.loss_scale_backoff, 0.25);
  EXPECT_EQ(c.training.loss_scale_min, 2);
  EXPECT_STREQ(
      config::name_of(
          load_checked_config(write("{}"), {"training.precision=bf16"}).training.precision),
      "bf16");
}

TEST_F(PrecisionConfigTest, BadValuesNameTheKeyAndTheLine) {
  const std::string path = (dir_ / "run.yaml").string();
  const std::string unknown = load_error("training:\n  precision: fp8\n");
  EXPECT_EQ(unknown.rfind(path + ":2: training.precision: ", 0), 0u) << unknown;
  EXPECT_NE(unknown.find("fp32, bf16, fp16"), std::string::npos) << unknown;
  const std::string backoff = load_error("training:\n  loss_scale_backoff: 1\n");
  EXPECT_EQ(backoff.rfind(path + ":2: training.loss_scale_backoff: ", 0), 0u) << backoff;
  const std::string min = load_error("training:\n  loss_scale_initial: 8\n  loss_scale_min: 16\n");
  EXPECT_EQ(min.rfind(path + ":3: training.loss_scale_min: ", 0), 0u) << min;
  EXPECT_NE(min.find("must not exceed training.loss_scale_initial"), std::string::npos) << min;
}

// parallel.tp_forward_sum: float32 by default; compute is accepted in any
// precision and layout (under fp32 and with tensor 1 it is the same thing).
TEST_F(PrecisionConfigTest, TpForwardSumDefaultsToFloat32AndNamesTheKeyWhenWrong) {
  EXPECT_EQ(load_checked_config(write("{}")).parallel.tp_forward_sum, "float32");
  EXPECT_EQ(load_checked_config(write("parallel:\n  tensor: 2\n  tp_forward_sum: compute\n"))
                .parallel.tp_forward_sum,
            "compute");
  EXPECT_EQ(
      load_checked_config(write("{}"), {"parallel.tp_forward_sum=compute"}).parallel.tp_forward_sum,
      "compute");
  const std::string path = (dir_ / "run.yaml").string();
  const std::string message = load_error("parallel:\n  tp_forward_sum: bf16\n");
  EXPECT_EQ(message.rfind(path + ":2: parallel.tp_forward_sum: ", 0), 0u) << message;
  EXPECT_NE(message.find("float32, compute"), std::string::npos) << message;
}

TEST_F(PrecisionConfigTest, ResnetRefuses16BitCompute) {
  const std::string message = load_error("model:\n  kind: resnet\ntraining:\n  precision: bf16\n");
  EXPECT_NE(message.find("training.precision"), std::string::npos) << message;
  EXPECT_NE(message.find("fp32 only"), std::string::npos) << message;
}

}  // namespace
}  // namespace cmpi::config
