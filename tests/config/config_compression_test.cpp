// The compression section of a config: rules in order with their origin, and
// every bad rule or value named by key, file and line.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compress/codec_registry.h"
#include "config/config_loader.h"
#include "tests/config/config_test_support.h"

namespace cmpi::config {
namespace {

using namespace config_testing;

// --------------------------------------------------------------- compression

TEST_F(ConfigTest, CompressionRulesAreReadInOrderWithTheirOrigin) {
  const std::string text = R"(compression:
  preset: mzhybrid
  min_bytes: 32KiB
  chunk_bytes: 256KiB
  error_sample_rate: 0.5
  rules:
    - match: {group: dp, op: [allreduce, reduce_scatter], role: gradient, min_bytes: 1MiB}
      codec: {name: identity}
      chunk_bytes: 4MiB
    - match: {group: [tp, pp], max_bytes: 64KiB}
      codec: identity
    - match: {op: send, locality: inter}
      codec: none
)";
  const std::string path = write(text);
  const comm::PolicyConfig p = load_checked_config(path).compression;
  EXPECT_EQ(p.preset, "mzhybrid");
  EXPECT_EQ(p.min_bytes, 32 << 10);
  EXPECT_EQ(p.chunk_bytes, 256 << 10);
  EXPECT_DOUBLE_EQ(p.error_sample_rate, 0.5);
  ASSERT_EQ(p.rules.size(), 3u);

  const comm::PolicyRule& first = p.rules[0];
  EXPECT_EQ(first.match.groups, std::vector<comm::GroupKind>{comm::GroupKind::kDp});
  EXPECT_EQ(first.match.ops,
            (std::vector<comm::Op>{comm::Op::kAllreduce, comm::Op::kReduceScatter}));
  EXPECT_EQ(first.match.roles, std::vector<comm::Role>{comm::Role::kGradient});
  EXPECT_EQ(first.match.min_bytes, 1 << 20);
  EXPECT_EQ(first.match.max_bytes, -1);
  ASSERT_TRUE(first.codec.has_value());
  EXPECT_EQ(first.codec->name(), "identity");
  EXPECT_EQ(first.chunk_bytes, 4 << 20);
  EXPECT_FALSE(first.error_feedback);
  EXPECT_EQ(first.origin, path + ":" + std::to_string(line_of(text, "- match: {group: dp")));

  EXPECT_EQ(p.rules[1].match.groups,
            (std::vector<comm::GroupKind>{comm::GroupKind::kTp, comm::GroupKind::kPp}));
  EXPECT_TRUE(p.rules[1].match.localities.empty()) << "no locality key: any";
  EXPECT_EQ(p.rules[2].match.localities, std::vector<comm::Locality>{comm::Locality::kInter});
  EXPECT_TRUE(p.rules[1].match.ops.empty());
  EXPECT_EQ(p.rules[1].match.min_bytes, -1);
  EXPECT_EQ(p.rules[1].match.max_bytes, 64 << 10);
  EXPECT_EQ(p.rules[1].chunk_bytes, -1);
  EXPECT_EQ(p.rules[1].codec->name(), "identity");

  EXPECT_EQ(p.rules[2].match.ops, std::vector<comm::Op>{comm::Op::kSendRecv});
  EXPECT_FALSE(p.rules[2].codec.has_value());
}

TEST_F(ConfigTest, BadCompressionRulesNameTheRuleKeyFileAndLine) {
  const std::string head = "compression:\n  rules:\n    - match: {group: dp}\n      codec: none\n";
  struct Case {
    std::string rule, needle, key, detail;
  } cases[] = {
      {"    - match: {group: dp}\n      codec: {name: zfpp, rate: 8}\n", "zfpp",
       "compression.rules[1].codec", "unknown codec 'zfpp' (known: "},
      {"    - match: {group: [dp, tq]}\n      codec: none\n", "tq",
       "compression.rules[1].match.group",
       "unknown group 'tq' (known: world, dp, tp, pp, sp, "
       "zero, cp; did you mean tp?)"},
      {"    - match: {op: allreduse}\n      codec: none\n", "allreduse",
       "compression.rules[1].match.op", "unknown operation 'allreduse'"},
      {"    - match: {role: gradients}\n      codec: none\n", "gradients",
       "compression.rules[1].match.role", "did you mean gradient?"},
      {"    - match: {group: dp}\n      codec: {name: identity, rate: 10}\n", "rate: 10",
       "compression.rules[1].codec", "codec 'identity': parameter 'rate' is unknown"},
      {"    - match: {group: dp}\n      codec: {name: identity, rate: [1, 2]}\n", "rate: [",
       "compression.rules[1].codec.rate", "codec parameters must be single values"},
      {"    - match: {group: dp}\n      codec: {rate: 10}\n", "rate: 10",
       "compression.rules[1].codec", "missing `name:`"},
      {"    - match: {group: dp}\n", "- match: {group: dp}\n", "compression.rules[1].codec",
       "missing: every rule says how to send"},
      {"    - match: {group: dp}\n      codecs: none\n      codec: none\n", "codecs",
       "compression.rules[1].codecs", "did you mean compression.rules[1].codec?"},
      {"    - match: {group: dp}\n      codec: none\n      error_feedback: true\n",
       "error_feedback", "compression.rules[1].error_feedback", "no error to feed back"},
      {"    - match: {group: dp}\n      codec: identity\n      error_feedback: true\n",
       "error_feedback", "compression.rules[1].error_feedback", "is lossless"},
      {"    - match: {min_bytes: 1MiB, max_bytes: 4KiB}\n      codec: none\n", "max_bytes",
       "compression.rules[1].match.max_bytes", "matches nothing"},
      {"    - match: {max_bytes: 4KiB}\n      codec: none\n", "max_bytes",
       "compression.rules[1].match.max_bytes", "below the inherited compression.min_bytes (64KiB)"},
      {"    - match: {group: dp}\n      codec: none\n      chunk_bytes: 1001\n", "chunk_bytes",
       "compression.rules[1].chunk_bytes", "multiple of 4"},
      {"    - match: {group: dp, size: 3}\n      codec: none\n", "size",
       "compression.rules[1].match.size", "unknown key"},
      {"    - match: {word: [bf16, bf8]}\n      codec: none\n", "bf8",
       "compression.rules[1].match.word", "unknown word type 'bf8' (known: float32, bf16, fp16"},
      {"    - match: {group: tp}\n      codec: {name: fp8, format: e3m4}\n", "e3m4",
       "compression.rules[1].codec", "codec 'fp8': parameter 'format' must be e4m3 or e5m2"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.rule);
    const std::string text = head + c.rule;
    const std::string path = write(text);
    const std::string message = error_of([&] { load_checked_config(path); });
    const size_t at = text.find(c.needle, head.size());  // the needle in the bad rule
    ASSERT_NE(at, std::string::npos) << "test bug: " << c.needle;
    const int line = 1 + int(std::count(text.begin(), text.begin() + at, '\n'));
    const std::string prefix = path + ":" + std::to_string(line) + ": " + c.key + ": ";
    EXPECT_EQ(message.rfind(prefix, 0), 0u)
        << "expected prefix: " << prefix << "\nmessage: " << message;
    EXPECT_CONTAINS(message, c.detail);
  }
}

// `match.word`: the element type of the message; fp32 is float32's alias
// (training.precision's word). Written back with the canonical names.
TEST_F(ConfigTest, CompressionRulesMatchOnWordTypeAndRoundTrip) {
  const std::string text = R"(compression:
  rules:
    - match: {group: [tp, pp], role: activation_grad, word: [bf16, fp16]}
      codec: {name: fp8, format: e5m2}
    - match: {word: fp32}
      codec: none
    - match: {group: pp}
      codec: identity
)";
  const comm::PolicyConfig p = load_checked_config(write(text)).compression;
  ASSERT_EQ(p.rules.size(), 3u);
  EXPECT_EQ(p.rules[0].match.words,
            (std::vector<compress::WordType>{compress::WordType::kBFloat16,
                                             compress::WordType::kFloat16}));
  EXPECT_EQ(p.rules[0].codec->get_string("format", ""), "e5m2");
  EXPECT_EQ(p.rules[1].match.words, std::vector<compress::WordType>{compress::WordType::kFloat32});
  EXPECT_TRUE(p.rules[2].match.words.empty()) << "no word key: any";

  const std::string written = to_yaml(load_checked_config(write(text)));
  EXPECT_CONTAINS(written, "word: [bf16, fp16]");
  EXPECT_CONTAINS(written, "word: float32");
  EXPECT_EQ(load_checked_config(write(written)).compression.rules[0].match.words,
            p.rules[0].match.words);
}

TEST_F(ConfigTest, BadCompressionSectionValues) {
  expect_error_at("compression:\n  preset: zhybird\n", "zhybird", "compression.preset",
                  "did you mean zhybrid?");
  expect_error_at("compression:\n  rules: {group: dp}\n", "group", "compression.rules",
                  "expected a list of rules");
  expect_error_at("compression:\n  chunk_bytes: 1023\n", "1023", "compression.chunk_bytes",
                  "multiple of 4");
  expect_error_at("compression:\n  error_sample_rate: 2\n", "2", "compression.error_sample_rate",
                  "expected a number in [0, 1]");
  expect_error_at("compression:\n  preset_locality: intra\n", "intra",
                  "compression.preset_locality", "inter");
  expect_error_at("compression:\n  ranks_per_node: -1\n", "-1", "compression.ranks_per_node", "");
  expect_error_at("compression:\n  rules:\n    - match: {locality: outer}\n      codec: none\n",
                  "outer", "compression.rules[0].match.locality", "inter");
}

TEST_F(ConfigTest, ZfpParametersAreValidatedWhenZfpIsBuiltIn) {
  if (!compress::CodecRegistry::with_builtin_codecs().contains("zfp"))
    GTEST_SKIP() << "zfp is not registered in this build";
  const std::string text =
      "compression:\n  rules:\n    - match: {group: dp}\n      codec: {name: zfp, mode: rate, "
      "rate: fast}\n";
  expect_error_at(text, "codec:", "compression.rules[0].codec", "rate");
  const Config ok = load_checked_config(
      write("compression:\n  rules:\n    - match: {group: dp}\n      codec: {name: "
            "zfp, mode: rate, rate: 10}\n"
            "      error_feedback: true\n",
            "ok.yaml"));
  EXPECT_TRUE(ok.compression.rules.at(0).error_feedback);
}

}  // namespace
}  // namespace cmpi::config

namespace cmpi::config {
namespace {

using namespace config_testing;

TEST_F(ConfigTest, AutoPresetReadsItsSectionAndRoundTrips) {
  const std::string text = R"(compression:
  preset: auto
  auto: {max_rel_error: 0.002, max_rel_error_feedback: 0.2, decide_every: 2, probe_every: 0,
         min_gain: 0.1, trend_window: 6}
)";
  const comm::PolicyConfig p = load_checked_config(write(text)).compression;
  EXPECT_EQ(p.preset, "auto");
  EXPECT_DOUBLE_EQ(p.auto_settings.max_rel_error, 0.002);
  EXPECT_DOUBLE_EQ(p.auto_settings.max_rel_error_feedback, 0.2);
  EXPECT_EQ(p.auto_settings.decide_every, 2);
  EXPECT_EQ(p.auto_settings.probe_every, 0);
  EXPECT_DOUBLE_EQ(p.auto_settings.min_gain, 0.1);
  EXPECT_EQ(p.auto_settings.trend_window, 6);

  const comm::PolicyConfig back =
      load_checked_config(write(to_yaml(load_checked_config(write(text))), "resolved.yaml"))
          .compression;
  EXPECT_DOUBLE_EQ(back.auto_settings.max_rel_error, 0.002);
  EXPECT_DOUBLE_EQ(back.auto_settings.max_rel_error_feedback, 0.2);
  EXPECT_EQ(back.auto_settings.decide_every, 2);
  EXPECT_EQ(back.auto_settings.probe_every, 0);
  EXPECT_DOUBLE_EQ(back.auto_settings.min_gain, 0.1);
  EXPECT_EQ(back.auto_settings.trend_window, 6);

  // Defaults without the section.
  const comm::PolicyConfig plain =
      load_checked_config(write("compression: {preset: auto}\n")).compression;
  EXPECT_DOUBLE_EQ(plain.auto_settings.max_rel_error, 0.01);
  EXPECT_DOUBLE_EQ(plain.auto_settings.max_rel_error_feedback, 0.1);
  EXPECT_EQ(plain.auto_settings.decide_every, 1);
  EXPECT_EQ(plain.auto_settings.trend_window, 10);
}

TEST_F(ConfigTest, AutoSectionBadValuesAreNamed) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"compression: {preset: zhybrid, auto: {min_gain: 0.1}}\n", "compression.auto"},
      {"compression: {preset: auto, auto: {max_rel_error: -1}}\n",
       "compression.auto.max_rel_error"},
      {"compression: {preset: auto, auto: {decide_every: 0}}\n", "compression.auto.decide_every"},
      {"compression: {preset: auto, auto: {min_gain: 1.5}}\n", "compression.auto.min_gain"},
      {"compression: {preset: auto, auto: {trend_window: -1}}\n", "compression.auto.trend_window"},
      {"compression: {preset: auto, auto: {budget: 1}}\n", "compression.auto.budget"},
  };
  for (const auto& [text, key] : cases) {
    const std::string path = write(text);
    const std::string message = error_of([&] { load_checked_config(path); });
    EXPECT_NE(message.find(key), std::string::npos) << text << " -> " << message;
    EXPECT_NE(message.find(path), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace cmpi::config
