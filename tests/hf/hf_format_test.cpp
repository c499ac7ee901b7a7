// The torch-free pieces of Hugging Face's format (hf/): safetensors files
// read back (float32 written by io/, half and bfloat16 written by hand from
// their bit patterns), malformed files refused naming the file and the
// tensor; the tensor layouts (every conversion's inverse, GPT-2's fused
// c_attn element by element); config.json written and checked back, and its
// disagreements and refusals worded by field.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "data/json_value.h"
#include "hf/hf_model_config.h"
#include "hf/hf_tensor_map.h"
#include "hf/safetensors_reader.h"
#include "io/safetensors_writer.h"
#include "tests/io/scratch_dir.h"
#include "tests/support/test_seed.h"

namespace cmpi::hf {
namespace {

using io::testing::ScratchDir;

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// A safetensors file with `header` (JSON) and raw `data`.
std::string safetensors_file(const std::string& header, const std::string& data) {
  std::string file(8, '\0');
  const uint64_t n = header.size();
  std::memcpy(file.data(), &n, 8);
  return file + header + data;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Safetensors, Float32RoundTrip) {
  ScratchDir dir;
  const std::vector<float> a{1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -8.5f}, b{42.0f};
  const std::string bytes = io::safetensors_bytes(
      {{"layer.a", {2, 3}, a.data()}, {"b", {1}, b.data()}}, {{"format", "pt"}});
  write_bytes(dir.file("m.safetensors"), bytes);
  const auto reader = SafetensorsReader::open(dir.file("m.safetensors"));
  ASSERT_EQ(reader.entries().size(), 2u);
  EXPECT_EQ(reader.find("layer.a")->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(reader.read("layer.a"), a);
  EXPECT_EQ(reader.read("b"), b);
  EXPECT_EQ(reader.find("c"), nullptr);
  EXPECT_NE(message_of([&] { reader.read("c"); }).find("m.safetensors: holds no tensor c"),
            std::string::npos);
}

TEST(Safetensors, HalfAndBfloat16Widen) {
  ScratchDir dir;
  // F16: 1.0, -2.5, 65504 (largest), 2^-24 (smallest subnormal), -0.
  const uint16_t half[] = {0x3C00, 0xC100, 0x7BFF, 0x0001, 0x8000};
  // BF16: 1.0, -3.0 (0xC040), 2^-126 (0x0080).
  const uint16_t bf16[] = {0x3F80, 0xC040, 0x0080};
  std::string data(reinterpret_cast<const char*>(half), sizeof half);
  data.append(reinterpret_cast<const char*>(bf16), sizeof bf16);
  const std::string header = R"({"h":{"dtype":"F16","shape":[5],"data_offsets":[0,10]},)"
                             R"("b":{"dtype":"BF16","shape":[3],"data_offsets":[10,16]}})";
  write_bytes(dir.file("half.safetensors"), safetensors_file(header, data));
  const auto reader = SafetensorsReader::open(dir.file("half.safetensors"));
  const auto h = reader.read("h");
  EXPECT_EQ(h[0], 1.0f);
  EXPECT_EQ(h[1], -2.5f);
  EXPECT_EQ(h[2], 65504.0f);
  EXPECT_EQ(h[3], std::ldexp(1.0f, -24));
  EXPECT_EQ(h[4], 0.0f);
  EXPECT_TRUE(std::signbit(h[4]));
  EXPECT_EQ(reader.read("b"), (std::vector<float>{1.0f, -3.0f, std::ldexp(1.0f, -126)}));
}

TEST(Safetensors, MalformedFilesNameFileAndTensor) {
  ScratchDir dir;
  const auto open_error = [&](const std::string& header, const std::string& data) {
    write_bytes(dir.file("bad.safetensors"), safetensors_file(header, data));
    return message_of([&] { SafetensorsReader::open(dir.file("bad.safetensors")); });
  };
  EXPECT_NE(open_error(R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}})",
                       std::string(12, '\0'))
                .find("bad.safetensors: tensor w: shape [2, 2] of F32 needs 16 bytes, "
                      "data_offsets give 12"),
            std::string::npos);
  EXPECT_NE(
      open_error(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", std::string(8, '\0'))
          .find("tensor w: data_offsets [0, 16] lie outside the file's 8 data bytes"),
      std::string::npos);
  EXPECT_NE(
      open_error(R"({"w":{"dtype":"I8","shape":[4],"data_offsets":[0,4]}})", std::string(4, '\0'))
          .find("tensor w: dtype I8 is not supported"),
      std::string::npos);
  EXPECT_NE(open_error("{not json", "").find("bad.safetensors: header is not JSON"),
            std::string::npos);
  write_bytes(dir.file("short.safetensors"), std::string("\xff\xff\0\0\0\0\0\0", 8));
  EXPECT_NE(message_of([&] {
              SafetensorsReader::open(dir.file("short.safetensors"));
            }).find("short.safetensors: not a safetensors file (header length"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              SafetensorsReader::open(dir.file("absent.safetensors"));
            }).find("absent.safetensors: cannot open"),
            std::string::npos);
}

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
              check_hf_config(data::JsonValue::parse(R"({"model_type":"llama"})"), m, "c.json");
            }),
            "c.json: model_type 'llama' is not supported (gpt_neox or gpt2)");
  config::ModelConfig untied;
  untied.tie_embeddings = false;
  EXPECT_NE(message_of([&] {
              hf_architecture(untied);
            }).find("model.tie_embeddings false with model.position learned"),
            std::string::npos);
  config::ModelConfig resnet;
  resnet.kind = "resnet";
  EXPECT_NE(message_of([&] { hf_config_json(resnet); }).find("model.kind resnet"),
            std::string::npos);
}

}  // namespace
}  // namespace cmpi::hf
