// training.on_nonfinite and training.max_skipped_steps: defaults, accepted
// values, the errors for bad ones (naming key, file and line) and the
// to_yaml round trip. Files go to a per-test temporary directory.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "config/config_loader.h"
#include "tests/config/config_test_support.h"

namespace cmpi::config {
namespace {

using namespace config_testing;
using NonfiniteConfigTest = ConfigTest;

TEST_F(NonfiniteConfigTest, DefaultsAbortAfterNoSkippedStepAndAllowFiveInARowWhenSkipping) {
  const Config c = load_checked_config(write("{}"));
  EXPECT_EQ(c.training.on_nonfinite, "abort");
  EXPECT_EQ(c.training.max_skipped_steps, 5);
}

TEST_F(NonfiniteConfigTest, ReadsBothKeysFromTheFileAndFromSet) {
  const Config c =
      load_checked_config(write("training:\n  on_nonfinite: skip_step\n  max_skipped_steps: 2\n"));
  EXPECT_EQ(c.training.on_nonfinite, "skip_step");
  EXPECT_EQ(c.training.max_skipped_steps, 2);

  const Config overridden = load_checked_config(
      write("{}"), {"training.on_nonfinite=skip_step", "training.max_skipped_steps=9"});
  EXPECT_EQ(overridden.training.on_nonfinite, "skip_step");
  EXPECT_EQ(overridden.training.max_skipped_steps, 9);
}

TEST_F(NonfiniteConfigTest, UnknownPolicyNamesTheKeyTheLineAndTheChoices) {
  const std::string message = load_error("training:\n  steps: 3\n  on_nonfinite: skip\n");
  const std::string path = (dir_ / "run.yaml").string();
  EXPECT_EQ(message.rfind(path + ":3: training.on_nonfinite: ", 0), 0u) << message;
  EXPECT_NE(message.find("expected one of abort, skip_step, got \"skip\""), std::string::npos)
      << message;
}

TEST_F(NonfiniteConfigTest, MaxSkippedStepsMustBePositive) {
  for (const char* bad : {"0", "-1"}) {
    SCOPED_TRACE(bad);
    const std::string message =
        load_error(std::string("training:\n  max_skipped_steps: ") + bad + "\n");
    const std::string path = (dir_ / "run.yaml").string();
    EXPECT_EQ(message.rfind(path + ":2: training.max_skipped_steps: ", 0), 0u) << message;
    EXPECT_NE(message.find("expected a positive integer"), std::string::npos) << message;
  }
  const std::string from_set = load_error("{}", {"training.max_skipped_steps=0"});
  EXPECT_NE(from_set.find("training.max_skipped_steps"), std::string::npos) << from_set;
}

TEST_F(NonfiniteConfigTest, ToYamlWritesBothKeysAndReadsThemBack) {
  Config original = load_checked_config(write("{}"));
  original.training.on_nonfinite = "skip_step";
  original.training.max_skipped_steps = 7;
  const std::string written = to_yaml(original);
  EXPECT_NE(written.find("on_nonfinite: skip_step"), std::string::npos) << written;
  EXPECT_NE(written.find("max_skipped_steps: 7"), std::string::npos) << written;
  const Config reloaded = load_checked_config(write(written, "resolved.yaml"));
  EXPECT_EQ(reloaded.training.on_nonfinite, "skip_step");
  EXPECT_EQ(reloaded.training.max_skipped_steps, 7);
}

}  // namespace
}  // namespace cmpi::config
