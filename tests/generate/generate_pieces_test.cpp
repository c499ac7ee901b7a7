// cmpi-generate's pieces that need no model: the sampler's top-k and top-p
// sets, streamed text across a UTF-8 character split between tokens, the
// Hugging Face config.json read back into a model section, and the command
// line's errors.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <set>
#include <string>
#include <vector>

#include "data/byte_tokenizer.h"
#include "data/json_value.h"
#include "generate/generate_args.h"
#include "generate/text_stream.h"
#include "generate/token_sampler.h"
#include "hf/hf_config_reader.h"
#include "hf/hf_model_config.h"
#include "tests/support/test_seed.h"

namespace cmpi::generate {
namespace {

// The ids 500 draws give for probabilities (0.1, 0.2, 0.3, 0.4).
std::set<int64_t> drawn(const SamplingOptions& options) {
  TokenSampler sampler(options);
  const auto logits = torch::tensor({0.1f, 0.2f, 0.3f, 0.4f}).log();
  std::set<int64_t> ids;
  for (int i = 0; i < 500; ++i) ids.insert(sampler.next(logits));
  return ids;
}

TEST(TokenSampler, TopKAndTopPKeepTheirSetsAndDrawFromAllOfIt) {
  const uint64_t seed = cmpi::testing::test_seed();
  EXPECT_EQ(drawn({1.0, 0, 1.0, seed}), (std::set<int64_t>{0, 1, 2, 3})) << "seed " << seed;
  EXPECT_EQ(drawn({1.0, 3, 1.0, seed}), (std::set<int64_t>{1, 2, 3})) << "seed " << seed;
  // 0.4 alone falls short of 0.5; 0.4 + 0.3 reaches it.
  EXPECT_EQ(drawn({1.0, 0, 0.5, seed}), (std::set<int64_t>{2, 3})) << "seed " << seed;
  EXPECT_EQ(drawn({1.0, 0, 0.4, seed}), (std::set<int64_t>{3})) << "seed " << seed;
  EXPECT_EQ(drawn({0.0, 0, 1.0, seed}), (std::set<int64_t>{3})) << "greedy";
}

TEST(TokenSampler, RefusesOutOfRangeOptionsByName) {
  const auto message = [](const SamplingOptions& o) {
    try {
      check_sampling_options(o);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message({-1.0, 0, 1.0, 0}).find("--temperature"), std::string::npos);
  EXPECT_NE(message({1.0, -2, 1.0, 0}).find("--top-k"), std::string::npos);
  EXPECT_NE(message({1.0, 0, 0.0, 0}).find("--top-p"), std::string::npos);
  EXPECT_NE(message({1.0, 0, 1.5, 0}).find("--top-p"), std::string::npos);
}

TEST(TextStream, HoldsBackAPartialUtf8CharacterUntilItIsComplete) {
  data::ByteTokenizer bytes;
  TextStream stream(bytes);
  // "a€b" as byte tokens: € is E2 82 AC.
  EXPECT_EQ(stream.push('a'), "a");
  EXPECT_EQ(stream.push(0xE2), "");
  EXPECT_EQ(stream.push(0x82), "");
  EXPECT_EQ(stream.push(0xAC), "\xE2\x82\xAC");
  EXPECT_EQ(stream.push('b'), "b");
  EXPECT_EQ(stream.push(data::ByteTokenizer::kEndOfDocument), "");  // decodes to nothing
  EXPECT_EQ(stream.push(0xC3), "");
  EXPECT_EQ(stream.finish(), "\xC3");  // a character the budget cut: handed out as it is
}

TEST(TextStream, CompleteUtf8PrefixLeavesOutOnlyAnUnfinishedSequence) {
  EXPECT_EQ(complete_utf8_prefix(""), 0u);
  EXPECT_EQ(complete_utf8_prefix("ab"), 2u);
  EXPECT_EQ(complete_utf8_prefix("a\xC3"), 1u);
  EXPECT_EQ(complete_utf8_prefix("a\xC3\xA9"), 3u);
  EXPECT_EQ(complete_utf8_prefix("a\xF0\x9F\x98"), 1u);      // 3 of an emoji's 4 bytes
  EXPECT_EQ(complete_utf8_prefix("a\xF0\x9F\x98\x80"), 5u);  // the emoji whole
  EXPECT_EQ(complete_utf8_prefix("a\x80"), 2u);              // a stray continuation byte is kept
}

config::ModelConfig read_back(const config::ModelConfig& model) {
  return hf::model_config_from_hf(data::JsonValue::parse(hf::hf_config_json(model)), "config.json");
}

void expect_same_model(const config::ModelConfig& a, const config::ModelConfig& b) {
  EXPECT_EQ(a.vocab_size, b.vocab_size);
  EXPECT_EQ(a.seq_len, b.seq_len);
  EXPECT_EQ(a.layers, b.layers);
  EXPECT_EQ(a.hidden, b.hidden);
  EXPECT_EQ(a.heads, b.heads);
  EXPECT_EQ(a.kv_heads > 0 ? a.kv_heads : a.heads, b.kv_heads > 0 ? b.kv_heads : b.heads);
  EXPECT_EQ(a.intermediate_size > 0 ? a.intermediate_size : a.mlp_ratio * a.hidden,
            b.intermediate_size > 0 ? b.intermediate_size : b.mlp_ratio * b.hidden);
  EXPECT_EQ(a.position, b.position);
  EXPECT_EQ(a.parallel_residual, b.parallel_residual);
  EXPECT_EQ(a.tie_embeddings, b.tie_embeddings);
  EXPECT_EQ(a.mlp_activation, b.mlp_activation);
  EXPECT_EQ(a.norm, b.norm);
  EXPECT_EQ(a.bias, b.bias);
  if (a.position == "rotary") {
    EXPECT_DOUBLE_EQ(a.rotary_pct, b.rotary_pct);
    EXPECT_DOUBLE_EQ(a.rotary_base, b.rotary_base);
  }
  EXPECT_DOUBLE_EQ(a.rope_scaling_factor, b.rope_scaling_factor);
}

TEST(HfConfigReader, ReadsBackWhatTheExportWritesForTheThreeArchitectures) {
  config::ModelConfig gpt2;
  gpt2.vocab_size = 300;
  gpt2.seq_len = 32;
  gpt2.mlp_activation = "gelu_tanh";
  expect_same_model(gpt2, read_back(gpt2));

  config::ModelConfig neox;
  neox.position = "rotary";
  neox.rotary_pct = 0.25;
  neox.parallel_residual = true;
  neox.tie_embeddings = false;
  neox.mlp_ratio = 2;
  expect_same_model(neox, read_back(neox));

  config::ModelConfig llama;
  llama.norm = config::Normalization::kRmsNorm;
  llama.mlp_activation = "swiglu";
  llama.bias = false;
  llama.position = "rotary";
  llama.rotary_pct = 1.0;
  llama.rotary_base = 500000;
  llama.kv_heads = 2;
  llama.intermediate_size = 176;
  llama.norm_eps = 1e-6;
  llama.tie_embeddings = false;
  llama.rope_scaling_factor = 8;
  llama.rope_original_max_positions = 32;
  expect_same_model(llama, read_back(llama));
}

TEST(HfConfigReader, RefusesWhatThisProjectCannotExpressNamingTheField) {
  const auto message = [](const std::string& json) {
    try {
      hf::model_config_from_hf(data::JsonValue::parse(json), "dir/config.json");
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message(R"({"model_type": "bert"})").rfind("dir/config.json: model_type 'bert'", 0),
            0u);
  EXPECT_NE(message(R"({"model_type": "gpt2", "n_embd": 64, "n_inner": 100})").find("n_inner"),
            std::string::npos);
  EXPECT_NE(
      message(R"({"model_type": "gpt2", "layer_norm_epsilon": 1e-6})").find("layer_norm_epsilon"),
      std::string::npos);
}

GenerateArgs parse(std::vector<const char*> argv) {
  argv.insert(argv.begin(), "cmpi-generate");
  return GenerateArgs::parse(int(argv.size()), argv.data());
}

std::string usage_error(std::vector<const char*> argv) {
  try {
    parse(std::move(argv));
  } catch (const UsageError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(GenerateArgs, ReadsPromptsAndDecodingOptions) {
  const auto args =
      parse({"--model", "m", "--ids", "1, 2,3", "--ids", "4", "--temperature", "0.7", "--top-k",
             "5", "--top-p", "0.9", "--seed", "11", "--max-new-tokens", "7", "--no-cache"});
  EXPECT_EQ(args.id_prompts, (std::vector<std::vector<int64_t>>{{1, 2, 3}, {4}}));
  EXPECT_DOUBLE_EQ(args.sampling.temperature, 0.7);
  EXPECT_EQ(args.sampling.top_k, 5);
  EXPECT_DOUBLE_EQ(args.sampling.top_p, 0.9);
  EXPECT_EQ(args.sampling.seed, 11u);
  EXPECT_TRUE(args.seed_given);
  EXPECT_EQ(args.max_new_tokens, 7);
  EXPECT_FALSE(args.use_cache);
}

TEST(GenerateArgs, NamesTheCulpritOfEveryMistake) {
  EXPECT_EQ(usage_error({"--model", "m", "--prompt", "x", "--frobnicate"}),
            "unknown option --frobnicate");
  EXPECT_EQ(usage_error({"--prompt", "x"}), "--model PATH is required");
  EXPECT_NE(usage_error({"--model", "m"}).find("no prompt"), std::string::npos);
  EXPECT_NE(usage_error({"--model", "m", "--ids", "1,x"}).find("'x'"), std::string::npos);
  EXPECT_NE(usage_error({"--model", "m", "--ids", "1,-2"}).find("'-2'"), std::string::npos);
  EXPECT_NE(usage_error({"--model", "m", "--ids", "1", "--prompt", "a"}).find("one kind"),
            std::string::npos);
  EXPECT_NE(usage_error({"--model", "m", "--ids", "1", "--top-p", "0"}).find("--top-p"),
            std::string::npos);
  EXPECT_NE(usage_error({"--model", "m", "--ids", "1", "--max-new-tokens"}).find("needs a value"),
            std::string::npos);
  EXPECT_NE(usage_error({"--model", "m", "--prompt-file", "/nonexistent/p.txt"})
                .find("/nonexistent/p.txt"),
            std::string::npos);
}

}  // namespace
}  // namespace cmpi::generate
