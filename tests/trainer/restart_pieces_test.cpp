// The pieces of restarts that need no MPI job: `--resume auto` on the command
// line, the test-only fault injection's variables (trainer/injected_kill.h),
// and latest_checkpoint_if_any on a root with no, an incomplete and a
// complete checkpoint.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_store.h"
#include "checkpoint/metadata.h"
#include "tests/trainer/parse_cli.h"
#include "trainer/cli_args.h"
#include "trainer/injected_kill.h"

namespace cmpi::trainer {
namespace {

using testing::parse_cli;

TEST(ResumeArgument, AutoIsAKeywordAndAPathStaysAPath) {
  const auto automatic = parse_cli({"--config", "c.yaml", "--resume", "auto"});
  EXPECT_TRUE(automatic.resume);
  EXPECT_TRUE(automatic.resume_auto);
  EXPECT_EQ(automatic.resume_path, "");
  const auto latest = parse_cli({"--config", "c.yaml", "--resume"});
  EXPECT_TRUE(latest.resume);
  EXPECT_FALSE(latest.resume_auto);
  const auto path = parse_cli({"--config", "c.yaml", "--resume", "./auto"});
  EXPECT_FALSE(path.resume_auto);
  EXPECT_EQ(path.resume_path, "./auto");
  EXPECT_THROW(parse_cli({"--config", "c.yaml", "--resume", "auto", "--export", "o.safetensors"}),
               UsageError);
}

TEST(InjectedKill, EntryKAppliesToAttemptK) {
  const auto first = injected_kill_for("1:41,2:121", "");
  EXPECT_EQ(first.rank, 1);
  EXPECT_EQ(first.step, 41);
  const auto second = injected_kill_for("1:41,2:121", "2");
  EXPECT_EQ(second.rank, 2);
  EXPECT_EQ(second.step, 121);
  EXPECT_EQ(injected_kill_for("1:41,2:121", "3").rank, -1);
  EXPECT_EQ(injected_kill_for("", "1").rank, -1);
}

TEST(InjectedKill, MalformedValuesNameTheVariable) {
  for (const char* bad : {"1", "1:", ":5", "a:5", "1:0", "-1:5", "1:5,", "1:5x"}) {
    try {
      injected_kill_for(bad, "");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("CMPI_TEST_KILL_AT_STEP"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(injected_kill_for("1:5", "0"), std::invalid_argument);
  EXPECT_THROW(injected_kill_for("1:5", "two"), std::invalid_argument);
}

TEST(LatestCheckpoint, IfAnyIsEmptyWithoutAComplete) {
  namespace fs = std::filesystem;
  const fs::path root =
      fs::temp_directory_path() / ("restart_pieces_" + std::to_string(::getpid()));
  fs::remove_all(root);
  EXPECT_EQ(checkpoint::latest_checkpoint_if_any(root.string()), "");  // no directory at all
  fs::create_directories(root / checkpoint::checkpoint_name(10));
  fs::create_directories(root / checkpoint::checkpoint_name(20));
  std::ofstream(root / checkpoint::checkpoint_name(10) / checkpoint::kMetadataFile) << "x";
  // step 20 has no metadata.yaml (a save that never finished): step 10 is the newest complete.
  EXPECT_EQ(checkpoint::latest_checkpoint_if_any(root.string()),
            (root / checkpoint::checkpoint_name(10)).string());
  fs::remove(root / checkpoint::checkpoint_name(10) / checkpoint::kMetadataFile);
  EXPECT_EQ(checkpoint::latest_checkpoint_if_any(root.string()), "");
  EXPECT_THROW(checkpoint::latest_checkpoint(root.string()), std::runtime_error);
  fs::remove_all(root);
}

}  // namespace
}  // namespace cmpi::trainer
