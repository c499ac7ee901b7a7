// Several --config files: merged in order (a later file's keys win, mappings
// merge key by key), errors naming the file and line that wrote the culprit,
// and describe_sources (--print-config) saying which file set a key and
// which earlier file it replaced.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "config/config_loader.h"
#include "tests/config/config_test_support.h"

namespace cmpi::config {
namespace {

using namespace config_testing;

const char* const kBase =
    "run:\n"
    "  name: base\n"
    "model:\n"
    "  layers: 2\n"
    "  hidden: 64\n"
    "training:\n"
    "  steps: 20\n"
    "  lr: 0.01\n";

TEST_F(ConfigTest, LaterFilesWinKeyByKeyAndKeepTheRest) {
  const std::string a = write(kBase, "a.yaml");
  const std::string b = write("model:\n  layers: 4\ntraining: {lr: 0.002}\n", "b.yaml");
  const Config c = load_checked_config(std::vector<std::string>{a, b}, {});
  EXPECT_EQ(c.model.layers, 4);     // b
  EXPECT_EQ(c.model.hidden, 64);    // a: mappings merge, they are not replaced
  EXPECT_EQ(c.training.lr, 0.002);  // b
  EXPECT_EQ(c.training.steps, 20);  // a
  EXPECT_EQ(c.run.name, "base");
  EXPECT_EQ(c.source, a + " + " + b);
  EXPECT_EQ(c.origins.at("model.layers"), b + ":2");
  EXPECT_EQ(c.origins.at("model.hidden"), a + ":5");
  ASSERT_EQ(c.replaced.count("model.layers"), 1u);
  EXPECT_EQ(c.replaced.at("model.layers"), std::vector<std::string>{a + ":4"});
  // The order matters: the other way round, a's values win.
  const Config d = load_checked_config(std::vector<std::string>{b, a}, {});
  EXPECT_EQ(d.model.layers, 2);
  EXPECT_EQ(d.training.lr, 0.01);
}

TEST_F(ConfigTest, ThreeFilesAndSetRecordEveryPlaceAKeyWasReplaced) {
  const std::string a = write(kBase, "a.yaml");
  const std::string b = write("training:\n  lr: 0.002\n", "b.yaml");
  const std::string c = write("{}\n", "c.yaml");
  const Config config =
      load_checked_config(std::vector<std::string>{a, b, c}, {"training.lr=0.003"});
  EXPECT_EQ(config.training.lr, 0.003);
  EXPECT_EQ(config.origins.at("training.lr"), "--set training.lr=0.003");
  EXPECT_EQ(config.replaced.at("training.lr"), (std::vector<std::string>{a + ":8", b + ":2"}));
  const std::string sources = describe_sources(config);
  EXPECT_CONTAINS(sources, "# Read from " + a + " + " + b + " + " + c + ", then --set");
  EXPECT_CONTAINS(sources,
                  "#   training.lr: --set training.lr=0.003 (replaced " + a + ":8, " + b + ":2)");
  // Keys only the first file wrote, once, are not repeated.
  EXPECT_EQ(sources.find("model.hidden"), std::string::npos) << sources;
}

TEST_F(ConfigTest, ListsAndScalarsAreReplacedWholeAndAnEmptySectionAddsNothing) {
  const std::string a =
      write("model: {layers: 4}\nparallel:\n  pipeline: 2\n  pipeline_balance: [3, 1]\n", "a.yaml");
  const std::string b = write("model:\nparallel:\n  pipeline_balance: [1, 3]\n", "b.yaml");
  const Config c = load_checked_config(std::vector<std::string>{a, b}, {});
  EXPECT_EQ(c.parallel.stage_layers, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(c.model.layers, 4);
}

TEST_F(ConfigTest, ErrorsNameTheFileAndLineThatWroteTheCulprit) {
  const std::string a = write(kBase, "a.yaml");
  // A bad value in the second file: its line, not the first file's.
  const std::string b = write("# local settings\ntraining:\n  steps: -3\n", "b.yaml");
  std::string message = error_of([&] { load_checked_config(std::vector<std::string>{a, b}, {}); });
  EXPECT_EQ(message.rfind(b + ":3: training.steps: expected a positive integer", 0), 0u) << message;
  // An unknown key in the second file.
  const std::string typo = write("model:\n  hiden: 32\n", "typo.yaml");
  message = error_of([&] { load_checked_config(std::vector<std::string>{a, typo}, {}); });
  EXPECT_EQ(message.rfind(typo + ":2: model.hiden: unknown key (did you mean model.hidden?)", 0),
            0u)
      << message;
  // A relation broken by the merge names the key the later file wrote.
  const std::string warm = write("training:\n  warmup_steps: 50\n", "warm.yaml");
  message = error_of([&] { load_checked_config(std::vector<std::string>{a, warm}, {}); });
  EXPECT_EQ(message.rfind(warm + ":2: training.warmup_steps: must be <= training.steps (20)", 0),
            0u)
      << message;
  // A key written twice within one later file is refused, not merged silently.
  const std::string twice = write("model:\n  layers: 3\n  layers: 5\n", "twice.yaml");
  message = error_of([&] { load_checked_config(std::vector<std::string>{a, twice}, {}); });
  EXPECT_EQ(
      message.rfind(twice + ":3: model.layers: key written twice (first at " + twice + ":2)", 0),
      0u)
      << message;
  // A later file that is not a mapping, and an empty one.
  const std::string list = write("- 1\n- 2\n", "list.yaml");
  message = error_of([&] { load_checked_config(std::vector<std::string>{a, list}, {}); });
  EXPECT_EQ(message.rfind(list + ":1: expected a mapping of config sections", 0), 0u) << message;
  const std::string empty = write("# nothing\n", "empty.yaml");
  message = error_of([&] { load_checked_config(std::vector<std::string>{a, empty}, {}); });
  EXPECT_EQ(message.rfind(empty + ": the config is empty", 0), 0u) << message;
}

TEST_F(ConfigTest, OneFileWithoutSetHasNoSourcesBlockAndSetIsShown) {
  const std::string a = write(kBase, "a.yaml");
  EXPECT_EQ(describe_sources(load_checked_config(a, {})), "");
  const std::string sources = describe_sources(load_checked_config(a, {"model.layers=3"}));
  EXPECT_CONTAINS(sources, "#   model.layers: --set model.layers=3 (replaced " + a + ":4)");
}

TEST_F(ConfigTest, ResolvedConfigOfSeveralFilesReadsBackEqual) {
  const std::string a = write(kBase, "a.yaml");
  const std::string b = write("run: {timeout: 1800}\nmodel: {layers: 4}\n", "b.yaml");
  const Config c = load_checked_config(std::vector<std::string>{a, b}, {});
  const std::string text = to_yaml(c) + describe_sources(c);
  const Config back = parse_checked_config(text, "resolved.yaml");
  EXPECT_EQ(to_yaml(back).substr(to_yaml(back).find('\n')),
            to_yaml(c).substr(to_yaml(c).find('\n')));
  EXPECT_EQ(back.model.layers, 4);
}

}  // namespace
}  // namespace cmpi::config
