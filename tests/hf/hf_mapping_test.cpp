// Hugging Face's model layouts and configs (hf/, torch-free): the tensor
// layouts (every conversion's inverse, GPT-2's fused c_attn element by
// element, Llama's grouped q/k/v rows); config.json written and checked back
// (also transformers 5's rope_parameters), and its disagreements and
// refusals worded by field.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "data/json_value.h"
#include "hf/hf_config_reader.h"
#include "hf/hf_model_config.h"
#include "hf/hf_tensor_map.h"
#include "models/family/gpt_family.h"
#include "tests/hf/error_message.h"
#include "tests/support/test_seed.h"

namespace cmpi::hf {
namespace {

using testing::message_of;

models::GptOptions small_model(bool rotary) {
  models::GptOptions o;
  o.vocab_size = 11;
  o.seq_len = 5;
  o.layers = 2;
  o.hidden = 12;
  o.heads = 3;
  o.mlp_ratio = 2;
  o.position = rotary ? models::PositionEncoding::kRotary : models::PositionEncoding::kLearned;
  o.tie_embeddings = !rotary;
  return o;
}

TEST(TensorMap, EveryConversionIsInvertedOnImport) {
  const uint64_t seed = cmpi::testing::test_seed();
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  for (const auto arch : {HfArchitecture::kGptNeoX, HfArchitecture::kGpt2}) {
    const auto options = small_model(arch == HfArchitecture::kGptNeoX);
    for (const auto& m : tensor_mappings(arch, options)) {
      int64_t count = 1;
      for (const int64_t d : m.our_shape) count *= d;
      std::vector<float> ours(static_cast<size_t>(count));
      for (auto& v : ours) v = normal(rng);
      const auto theirs = to_hf(m, ours, options.heads);
      ASSERT_EQ(theirs.size(), ours.size()) << m.ours;
      EXPECT_EQ(from_hf(m, theirs, options.heads), ours) << m.ours << " (seed " << seed << ")";
    }
  }
}

TEST(TensorMap, Gpt2FusedQkvRegroupsHeadsAndTransposes) {
  const auto options = small_model(false);  // hidden 12, 3 heads: head_dim 4
  const int64_t h = 12, hd = 4;
  for (const auto& m : tensor_mappings(HfArchitecture::kGpt2, options)) {
    if (m.ours != "block1.attention.qkv.weight") continue;
    EXPECT_EQ(m.theirs, "transformer.h.1.attn.c_attn.weight");
    EXPECT_EQ(m.their_shape, (std::vector<int64_t>{h, 3 * h}));
    // Our row of (head n, part s, dim d) is n·3·hd + s·hd + d, Linear [out, in].
    std::vector<float> ours(size_t(3 * h * h));
    for (size_t i = 0; i < ours.size(); ++i) ours[i] = float(i);
    const auto theirs = to_hf(m, ours, options.heads);
    for (int64_t n = 0; n < 3; ++n)
      for (int64_t s = 0; s < 3; ++s)
        for (int64_t d = 0; d < hd; ++d)
          for (int64_t in = 0; in < h; ++in) {
            const int64_t row = n * 3 * hd + s * hd + d, column = s * h + n * hd + d;
            ASSERT_EQ(theirs[size_t(in * 3 * h + column)], ours[size_t(row * h + in)])
                << "head " << n << " part " << s << " dim " << d << " input " << in;
          }
    return;
  }
  FAIL() << "no qkv mapping";
}

TEST(TensorMap, NamesOfBothArchitectures) {
  std::vector<std::string> neox, gpt2;
  for (const auto& m : tensor_mappings(HfArchitecture::kGptNeoX, small_model(true)))
    neox.push_back(m.theirs);
  for (const auto& m : tensor_mappings(HfArchitecture::kGpt2, small_model(false)))
    gpt2.push_back(m.theirs);
  EXPECT_EQ(neox.front(), "gpt_neox.embed_in.weight");
  EXPECT_EQ(neox.back(), "embed_out.weight");
  EXPECT_NE(std::find(neox.begin(), neox.end(), "gpt_neox.layers.1.attention.query_key_value.bias"),
            neox.end());
  EXPECT_EQ(gpt2[1], "transformer.wpe.weight");
  EXPECT_NE(std::find(gpt2.begin(), gpt2.end(), "transformer.h.0.mlp.c_proj.weight"), gpt2.end());
  EXPECT_EQ(gpt2.back(), "transformer.ln_f.bias");  // tied: no lm_head
  EXPECT_EQ(neox.size(), 1 + 2 * 12 + 2 + 1u);      // embed_in, 2 layers, final norm, embed_out
  EXPECT_EQ(gpt2.size(), 2 + 2 * 12 + 2u);          // wte, wpe, 2 layers, ln_f
}

// Llama 3's switches on a small shape: 4 query heads over 2 key/value heads
// (head_dim 4), an MLP 20 wide, untied.
models::GptOptions small_llama() {
  models::GptOptions o = small_model(true);
  o.hidden = 16;
  o.heads = 4;
  o.kv_heads = 2;
  o.intermediate_size = 20;
  o.norm = models::NormKind::kRmsNorm;
  o.activation = models::MlpActivation::kSwiGlu;
  o.bias = false;
  o.rotary_pct = 1.0;
  return o;
}

// Ours from the Hugging Face tensors of each of our parameters (one, or
// Llama's q, k, v parts).
void expect_import_inverts_export(HfArchitecture arch, const models::GptOptions& options,
                                  std::mt19937_64& rng, uint64_t seed) {
  std::normal_distribution<float> normal;
  const auto mappings = tensor_mappings(arch, options);
  for (size_t i = 0; i < mappings.size();) {
    size_t end = i + 1;
    while (end < mappings.size() && mappings[end].ours == mappings[i].ours &&
           !mappings[end].export_only)
      ++end;
    int64_t count = 1;
    for (const int64_t d : mappings[i].our_shape) count *= d;
    std::vector<float> ours(static_cast<size_t>(count));
    for (auto& v : ours) v = normal(rng);
    std::vector<TensorMapping> parts(mappings.begin() + std::ptrdiff_t(i),
                                     mappings.begin() + std::ptrdiff_t(end));
    std::vector<std::vector<float>> theirs;
    size_t exported = 0;
    for (const auto& part : parts) {
      theirs.push_back(to_hf(part, ours, options.heads));
      exported += theirs.back().size();
    }
    ASSERT_EQ(exported, ours.size()) << mappings[i].ours;
    EXPECT_EQ(from_hf_parts(parts, theirs, options.heads), ours)
        << mappings[i].ours << " (seed " << seed << ")";
    i = end;
  }
}

TEST(TensorMap, LlamaPartsAreInvertedOnImport) {
  const uint64_t seed = cmpi::testing::test_seed();
  std::mt19937_64 rng(seed);
  expect_import_inverts_export(HfArchitecture::kLlama, small_llama(), rng, seed);
  auto multi_head = small_llama();
  multi_head.kv_heads = 0;  // one key/value head per query head
  expect_import_inverts_export(HfArchitecture::kLlama, multi_head, rng, seed);
}

TEST(TensorMap, LlamaQkvRowsRunByKeyValueGroup) {
  const auto options = small_llama();  // 4 query heads, 2 kv heads, head_dim 4: group 2
  const int64_t h = 16, d = 4, g = 2;
  std::map<std::string, std::vector<float>> parts;
  std::vector<float> ours(size_t((4 + 2 * 2) * d * h));
  for (size_t i = 0; i < ours.size(); ++i) ours[i] = float(i);
  std::vector<std::string> names;
  for (const auto& m : tensor_mappings(HfArchitecture::kLlama, options)) {
    names.push_back(m.theirs);
    if (m.ours == "block1.attention.qkv.weight") parts[m.theirs] = to_hf(m, ours, options.heads);
  }
  const auto& q = parts.at("model.layers.1.self_attn.q_proj.weight");
  const auto& k = parts.at("model.layers.1.self_attn.k_proj.weight");
  const auto& v = parts.at("model.layers.1.self_attn.v_proj.weight");
  ASSERT_EQ(q.size(), size_t(4 * d * h));
  ASSERT_EQ(k.size(), size_t(2 * d * h));
  // Query head n = group kv·g + j sits at our rows kv·(g+2)·d + j·d; its k and
  // v at kv·(g+2)·d + g·d and + (g+1)·d.
  for (int64_t kv = 0; kv < 2; ++kv)
    for (int64_t dim = 0; dim < d; ++dim)
      for (int64_t in = 0; in < h; ++in) {
        const int64_t base = kv * (g + 2) * d;
        for (int64_t j = 0; j < g; ++j)
          ASSERT_EQ(q[size_t(((kv * g + j) * d + dim) * h + in)],
                    ours[size_t((base + j * d + dim) * h + in)]);
        ASSERT_EQ(k[size_t((kv * d + dim) * h + in)], ours[size_t((base + g * d + dim) * h + in)]);
        ASSERT_EQ(v[size_t((kv * d + dim) * h + in)],
                  ours[size_t((base + (g + 1) * d + dim) * h + in)]);
      }
  EXPECT_EQ(names.front(), "model.embed_tokens.weight");
  EXPECT_EQ(names.back(), "lm_head.weight");
  EXPECT_NE(std::find(names.begin(), names.end(), "model.layers.0.mlp.gate_proj.weight"),
            names.end());
  EXPECT_EQ(names.size(), 1 + 2 * 9 + 2u);  // embed, 2 layers of 9, norm, lm_head
}

config::ModelConfig neox_config();

config::ModelConfig llama_config() {
  config::ModelConfig m;
  m.hidden = 64;
  m.heads = 8;
  m.kv_heads = 2;
  m.layers = 2;
  m.vocab_size = 100;
  m.seq_len = 32;
  m.position = "rotary";
  m.rotary_pct = 1.0;
  m.rotary_base = 500000;
  m.norm = config::Normalization::kRmsNorm;
  m.mlp_activation = "swiglu";
  m.intermediate_size = 96;
  m.bias = false;
  m.tie_embeddings = false;
  m.rope_scaling_factor = 8;
  m.rope_original_max_positions = 16;
  return m;
}

TEST(HfConfig, LlamaConfigChecksBackAndDisagreementsAreNamed) {
  const config::ModelConfig m = llama_config();
  const auto json = data::JsonValue::parse(hf_config_json(m));
  EXPECT_EQ(check_hf_config(json, m, "d/config.json").architecture, HfArchitecture::kLlama);
  config::ModelConfig other = m;
  other.kv_heads = 4;
  EXPECT_EQ(message_of([&] { check_hf_config(json, other, "d/config.json"); }),
            "d/config.json: num_key_value_heads is 2, but model.kv_heads is 4");
  other = m;
  other.rope_scaling_factor = 0;
  EXPECT_EQ(message_of([&] { check_hf_config(json, other, "d/config.json"); }),
            "d/config.json: rope_scaling.factor is 8.0, but model.rope_scaling_factor is 0.0");
  other = m;
  other.intermediate_size = 128;
  EXPECT_EQ(message_of([&] { check_hf_config(json, other, "d/config.json"); }),
            "d/config.json: intermediate_size is 96, but model.intermediate_size is 128");
  // transformers 5 writes rope_theta and the scaling into rope_parameters.
  const auto v5 = data::JsonValue::parse(
      R"({"model_type":"llama","hidden_size":64,"num_attention_heads":8,"num_key_value_heads":2,)"
      R"("num_hidden_layers":2,"vocab_size":100,"intermediate_size":96,"rms_norm_eps":1e-05,)"
      R"("max_position_embeddings":32,"rope_parameters":{"rope_type":"llama3","rope_theta":500000.0,)"
      R"("factor":8.0,"low_freq_factor":1.0,"high_freq_factor":4.0,)"
      R"("original_max_position_embeddings":16}})");
  EXPECT_EQ(check_hf_config(v5, m, "c.json").architecture, HfArchitecture::kLlama);
  other = m;
  other.rotary_base = 10000;
  EXPECT_EQ(message_of([&] { check_hf_config(v5, other, "c.json"); }),
            "c.json: rope_parameters.rope_theta is 500000.0, but model.rotary_base is 10000.0");
  // The switches a Llama needs, and those GPT-NeoX cannot take, by key.
  other = m;
  other.bias = true;
  EXPECT_NE(message_of([&] { hf_architecture(other); }).find("model.bias true"), std::string::npos);
  config::ModelConfig neox = neox_config();
  neox.kv_heads = 2;
  EXPECT_NE(message_of([&] { hf_architecture(neox); }).find("model.kv_heads"), std::string::npos);
  EXPECT_NE(message_of([&] {
              check_hf_config(json, neox_config(), "c.json");
            }).find("c.json: model_type llama: model.mlp_activation gelu_tanh"),
            std::string::npos);
}

config::ModelConfig neox_config() {
  config::ModelConfig m;
  m.hidden = 64;
  m.heads = 4;
  m.layers = 3;
  m.vocab_size = 100;
  m.seq_len = 32;
  m.position = "rotary";
  m.rotary_pct = 0.25;
  m.rotary_base = 10000;
  m.parallel_residual = true;
  m.tie_embeddings = false;
  m.mlp_activation = "gelu_tanh";
  return m;
}

TEST(HfConfig, WrittenConfigChecksBackAndDisagreementsAreNamed) {
  for (const bool rotary : {true, false}) {
    config::ModelConfig m = rotary ? neox_config() : config::ModelConfig{};
    const auto json = data::JsonValue::parse(hf_config_json(m));
    const auto facts = check_hf_config(json, m, "d/config.json");
    EXPECT_EQ(facts.architecture, rotary ? HfArchitecture::kGptNeoX : HfArchitecture::kGpt2);
    config::ModelConfig other = m;
    other.layers = 5;
    EXPECT_EQ(message_of([&] { check_hf_config(json, other, "d/config.json"); }),
              std::string("d/config.json: ") + (rotary ? "num_hidden_layers" : "n_layer") + " is " +
                  std::to_string(m.layers) + ", but model.layers is 5");
  }
  const auto neox = data::JsonValue::parse(hf_config_json(neox_config()));
  config::ModelConfig m = neox_config();
  m.rotary_base = 500;
  EXPECT_EQ(message_of([&] { check_hf_config(neox, m, "c.json"); }),
            "c.json: rotary_emb_base is 10000.0, but model.rotary_base is 500.0");
  m = neox_config();
  m.mlp_activation = "gelu";
  EXPECT_EQ(message_of([&] { check_hf_config(neox, m, "c.json"); }),
            "c.json: hidden_act is 'gelu_new' (model.mlp_activation gelu_tanh), but "
            "model.mlp_activation is gelu");
  m = neox_config();
  m.seq_len = 64;
  EXPECT_EQ(message_of([&] { check_hf_config(neox, m, "c.json"); }),
            "c.json: max_position_embeddings is 32, fewer than model.seq_len 64");
  m = neox_config();
  m.position = "learned";
  EXPECT_EQ(message_of([&] { check_hf_config(neox, m, "c.json"); }),
            "c.json: model_type gpt_neox has rotary positions, but model.position is learned");
}

TEST(HfConfig, PublishedDefaultsAndUnsupportedSettings) {
  // A GPT-2 config.json as the original model ships it: most fields absent
  // (defaults), no n_inner (4 x n_embd), gelu_new, 1024 positions.
  const auto gpt2 = data::JsonValue::parse(
      R"({"model_type":"gpt2","n_embd":64,"n_head":4,"n_layer":2,"vocab_size":50257})");
  config::ModelConfig m;
  m.hidden = 64;
  m.heads = 4;
  m.layers = 2;
  m.vocab_size = 50257;
  m.mlp_activation = "gelu_tanh";
  EXPECT_EQ(check_hf_config(gpt2, m, "c.json").position_rows, 1024);
  const auto scaled = data::JsonValue::parse(
      R"({"model_type":"gpt_neox","hidden_size":64,"num_attention_heads":4,"num_hidden_layers":3,)"
      R"("vocab_size":100,"intermediate_size":256,"rotary_pct":0.25,"hidden_act":"gelu_new",)"
      R"("rope_scaling":{"type":"linear","factor":2.0}})");
  EXPECT_EQ(message_of([&] { check_hf_config(scaled, neox_config(), "c.json"); }),
            "c.json: rope_scaling is set; this project implements unscaled rotary embeddings only");
  EXPECT_EQ(message_of([&] {
              check_hf_config(data::JsonValue::parse(R"({"model_type":"mistral"})"), m, "c.json");
            }),
            "c.json: model_type 'mistral' is not supported (gpt_neox, gpt2 or llama)");
  config::ModelConfig untied;
  untied.tie_embeddings = false;
  EXPECT_NE(message_of([&] {
              hf_architecture(untied);
            }).find("model.tie_embeddings false with model.position learned"),
            std::string::npos);
  config::ModelConfig resnet;
  resnet.kind = config::ModelFamily::kResnet;
  EXPECT_NE(message_of([&] { hf_config_json(resnet); }).find("model.kind resnet"),
            std::string::npos);
}

// Found by bench/fuzz: an integer field of 1e300 (or 1e999, read as
// infinity) was cast from double to int64_t, which is undefined.
TEST(HfConfig, IntegersPast2To53AreRefusedByField) {
  const std::string fields =
      R"("model_type":"gpt_neox","num_attention_heads":4,"num_hidden_layers":3,)"
      R"("vocab_size":100,"intermediate_size":256,"hidden_act":"gelu_new",)";
  const auto read = [&](const std::string& hidden) {
    return message_of([&] {
      model_config_from_hf(
          data::JsonValue::parse("{" + fields + R"("hidden_size":)" + hidden + "}"), "c.json");
    });
  };
  EXPECT_EQ(read("64"), "(no error)");
  EXPECT_EQ(read("1e300"), "c.json: hidden_size is not a whole number of at most 2^53");
  EXPECT_EQ(read("1e999"), "c.json: hidden_size is not a whole number of at most 2^53");
  EXPECT_EQ(read("-64"), "c.json: hidden_size is not a whole number of at most 2^53");
  const auto check = [&](const std::string& layers) {
    return message_of([&] {
      check_hf_config(data::JsonValue::parse(
                          R"({"model_type":"gpt_neox","hidden_size":64,"num_attention_heads":4,)"
                          R"("num_hidden_layers":)" +
                          layers + "}"),
                      neox_config(), "c.json");
    });
  };
  EXPECT_EQ(check("1e300"),
            "c.json: num_hidden_layers is 1e+300, not a whole number of at most 2^53");
  EXPECT_EQ(check("9007199254740994"),
            "c.json: num_hidden_layers is 9007199254740994, not a whole number of at most 2^53");
}

TEST(HfConfig, Transformers5RopeParameters) {
  // GPTNeoXConfig.save_pretrained in transformers 5 writes the rotary
  // settings only inside rope_parameters, and reads them from there before
  // rotary_pct / rotary_emb_base.
  config::ModelConfig m = neox_config();
  m.rotary_pct = 0.5;
  m.rotary_base = 500;
  const std::string fields =
      R"("model_type":"gpt_neox","hidden_size":64,"num_attention_heads":4,"num_hidden_layers":3,)"
      R"("vocab_size":100,"intermediate_size":256,"hidden_act":"gelu_new",)"
      R"("max_position_embeddings":32,"tie_word_embeddings":false,)";
  const auto saved = data::JsonValue::parse(
      "{" + fields +
      R"("rope_parameters":{"partial_rotary_factor":0.5,"rope_theta":500,"rope_type":"default"}})");
  EXPECT_EQ(check_hf_config(saved, m, "c.json").architecture, HfArchitecture::kGptNeoX);
  // rope_parameters wins over the older spellings beside it.
  const auto both = data::JsonValue::parse(
      "{" + fields + R"("rotary_pct":0.25,"rotary_emb_base":10000,)" +
      R"("rope_parameters":{"partial_rotary_factor":0.5,"rope_theta":500}})");
  EXPECT_NO_THROW(check_hf_config(both, m, "c.json"));
  config::ModelConfig quarter = m;
  quarter.rotary_pct = 0.25;
  EXPECT_EQ(message_of([&] { check_hf_config(saved, quarter, "c.json"); }),
            "c.json: rope_parameters.partial_rotary_factor is 0.5, but model.rotary_pct is 0.25");
  config::ModelConfig base = m;
  base.rotary_base = 10000;
  EXPECT_EQ(message_of([&] { check_hf_config(saved, base, "c.json"); }),
            "c.json: rope_parameters.rope_theta is 500.0, but model.rotary_base is 10000.0");
  const auto linear = data::JsonValue::parse(
      "{" + fields + R"("rope_parameters":{"rope_type":"linear","factor":2.0,"rope_theta":500}})");
  EXPECT_EQ(message_of([&] { check_hf_config(linear, m, "c.json"); }),
            "c.json: rope_parameters.rope_type is 'linear'; this project implements unscaled "
            "rotary embeddings only (default)");
  const auto text = data::JsonValue::parse("{" + fields + R"("rope_parameters":"default"})");
  EXPECT_EQ(message_of([&] { check_hf_config(text, m, "c.json"); }),
            "c.json: rope_parameters is a string, expected an object");
}

}  // namespace
}  // namespace cmpi::hf
