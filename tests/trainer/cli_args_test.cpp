// cmpi-train's command line without an MPI job: several --config files keep
// their order, --version needs no --config, and the usage text lists every
// option parse() accepts (its first lines, the synopsis, and the list below).
#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <vector>

#include "tests/trainer/parse_cli.h"
#include "trainer/cli_args.h"
#include "trainer/version_info.h"

namespace cmpi::trainer {
namespace {

using testing::parse_cli;

TEST(CommandLine, SeveralConfigFilesKeepTheirOrder) {
  const CliArgs args = parse_cli(
      {"--config", "20B.yml", "--set", "run.name=x", "--config=local.yml", "--config", "c"});
  EXPECT_EQ(args.config_paths, (std::vector<std::string>{"20B.yml", "local.yml", "c"}));
  EXPECT_THROW(parse_cli({"--set", "run.name=x"}), UsageError);  // no --config at all
}

TEST(CommandLine, VersionNeedsNoConfig) {
  EXPECT_TRUE(parse_cli({"--version"}).version);
  const std::string text = version_text();
  for (const char* part : {"cmpi-train ", "git revision: ", "LibTorch: 2.", "MPI: ", "CUDA: "})
    EXPECT_NE(text.find(part), std::string::npos) << part << " missing from:\n" << text;
}

TEST(CommandLine, UsageListsEveryOptionInItsSynopsisAndItsList) {
  const std::string usage = CliArgs::usage();
  const size_t list = usage.find("\n  --");  // where the option list starts
  ASSERT_NE(list, std::string::npos);
  const std::string synopsis = usage.substr(0, list);
  const std::string details = usage.substr(list);
  for (const std::string& flag : CliArgs::flags()) {
    // "--plan" must be found as itself, not as the start of "--plan-json".
    const auto has = [&](const std::string& text) {
      for (size_t at = text.find(flag); at != std::string::npos; at = text.find(flag, at + 1)) {
        const char next = at + flag.size() < text.size() ? text[at + flag.size()] : ' ';
        if (next != '-' && !std::isalnum(static_cast<unsigned char>(next))) return true;
      }
      return false;
    };
    EXPECT_TRUE(has(synopsis)) << flag << " is not in the usage line:\n" << synopsis;
    EXPECT_TRUE(has(details)) << flag << " is not explained in the usage text";
  }
  // And every option the text names is accepted.
  EXPECT_THROW(parse_cli({"--config", "c.yaml", "--no-such-option"}), UsageError);
}

}  // namespace
}  // namespace cmpi::trainer
