// The torch-free pieces of Hugging Face's format (hf/): safetensors files
// read back (float32 written by io/, half and bfloat16 written by hand from
// their bit patterns), malformed files refused naming the file and the
// tensor; mask and inv_freq buffers (U8, BOOL, ...) skipped by name while a
// weight in such a dtype is refused, in one file and through a whole model
// directory (HfPretrained); the tensor layouts (every conversion's inverse,
// GPT-2's fused c_attn element by element); config.json written and checked
// back (also transformers 5's rope_parameters), and its disagreements and
// refusals worded by field.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "data/json_value.h"
#include "hf/hf_config_reader.h"
#include "hf/hf_model_config.h"
#include "hf/hf_pretrained.h"
#include "hf/hf_tensor_map.h"
#include "hf/safetensors_reader.h"
#include "io/safetensors_writer.h"
#include "models/family/gpt_family.h"
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

// One tensor of a hand-built file: any dtype string, raw bytes.
struct RawTensor {
  std::string name, dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

std::string floats_bytes(const std::vector<float>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

// The bytes of a safetensors file holding `tensors` in order.
std::string safetensors_file(const std::vector<RawTensor>& tensors) {
  std::string header = "{", data;
  for (const auto& t : tensors) {
    std::string shape;
    for (const int64_t d : t.shape) shape += (shape.empty() ? "" : ",") + std::to_string(d);
    header += (header.size() > 1 ? "," : "") + ("\"" + t.name + "\":{\"dtype\":\"" + t.dtype) +
              "\",\"shape\":[" + shape + "],\"data_offsets\":[" + std::to_string(data.size()) +
              "," + std::to_string(data.size() + t.bytes.size()) + "]}";
    data += t.bytes;
  }
  return safetensors_file(header + "}", data);
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
  // A dtype no weight can have is refused when the tensor is read, not
  // when the file is opened (a tensor nobody reads is skipped).
  write_bytes(dir.file("i8.safetensors"),
              safetensors_file(R"({"w":{"dtype":"I8","shape":[4],"data_offsets":[0,4]}})",
                               std::string(4, '\0')));
  const auto i8 = SafetensorsReader::open(dir.file("i8.safetensors"));
  EXPECT_NE(
      message_of([&] { i8.read("w"); }).find("i8.safetensors: tensor w: dtype I8 is not supported"),
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

// Found by bench/fuzz: numbers past what an integer holds were cast from
// double (undefined; 1e300 became any offset), and a shape whose element
// count passes 2^64 wrapped to a small count that its data_offsets could
// match, so a tensor of [2^32, 2^32] floats in 0 bytes was accepted.
TEST(Safetensors, NumbersPastAnIntegerAndShapesPast2To64AreRefused) {
  const auto header_error = [](const std::string& header) {
    return message_of([&] { SafetensorsReader::from_header("h.safetensors", header, 64); });
  };
  EXPECT_EQ(header_error(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,1e300]}})"),
            "h.safetensors: tensor w: data_offsets are not byte offsets");
  EXPECT_EQ(header_error(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[1e999,4]}})"),
            "h.safetensors: tensor w: data_offsets are not byte offsets");
  EXPECT_EQ(header_error(R"({"w":{"dtype":"F32","shape":[1e300],"data_offsets":[0,4]}})"),
            "h.safetensors: tensor w: shape holds something other than whole numbers of at "
            "most 2^53");
  EXPECT_EQ(header_error(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],)"
                         R"("data_offsets":[0,0]}})"),
            "h.safetensors: tensor w: shape [4294967296, 4294967296] holds more elements than "
            "any file");
  EXPECT_EQ(header_error(R"({"w":{"dtype":"F32","shape":[4611686018427387904],)"
                         R"("data_offsets":[0,0]}})"),
            "h.safetensors: tensor w: shape holds something other than whole numbers of at "
            "most 2^53");
  EXPECT_EQ(header_error(R"({"w":{"dtype":"F64","shape":[4194304,4194304,2097152],)"
                         R"("data_offsets":[0,0]}})"),
            "h.safetensors: tensor w: shape [4194304, 4194304, 2097152] holds more elements "
            "than any file");
  // A zero extent makes any other extent hold no elements.
  const auto empty = SafetensorsReader::from_header(
      "h.safetensors",
      R"({"w":{"dtype":"F32","shape":[0,9007199254740992,9007199254740992],"data_offsets":[0,0]}})",
      64);
  EXPECT_EQ(empty.find("w")->shape.size(), 3u);
}

TEST(Safetensors, BufferNamesAreWholeComponents) {
  for (const char* name :
       {"gpt_neox.layers.0.attention.bias", "gpt_neox.layers.11.attention.masked_bias",
        "gpt_neox.layers.0.attention.rotary_emb.inv_freq", "gpt_neox.rotary_emb.inv_freq",
        "transformer.h.3.attn.bias", "h.0.attn.masked_bias", "attn.bias"})
    EXPECT_TRUE(is_buffer_name(name)) << name;
  // Parameters whose names end in the same letters.
  for (const char* name :
       {"transformer.h.0.attn.c_attn.bias", "h.0.attn.c_proj.bias",
        "gpt_neox.layers.0.attention.dense.bias",
        "gpt_neox.layers.0.attention.query_key_value.bias", "gpt_neox.layers.0.self_attention.bias",
        "bias", "attention", "inv_freq"})
    EXPECT_FALSE(is_buffer_name(name)) << name;
}

TEST(Safetensors, MaskBuffersAreSkippedWhateverTheirDtype) {
  ScratchDir dir;
  // As transformers and published checkpoints store them: causal masks as
  // BOOL or U8, masked_bias a float scalar, inv_freq in half; one in a
  // dtype no reader here knows at all.
  const std::string mask(16, '\1');
  const std::vector<float> weight{1.0f, -2.0f, 3.0f, -4.0f}, bias{0.5f, 0.25f};
  write_bytes(
      dir.file("pythia.safetensors"),
      safetensors_file({
          {"gpt_neox.layers.0.attention.bias", "BOOL", {1, 1, 4, 4}, mask},
          {"gpt_neox.layers.0.attention.masked_bias", "F32", {}, floats_bytes({-1e9f})},
          {"gpt_neox.layers.0.attention.dense.weight", "F32", {2, 2}, floats_bytes(weight)},
          {"gpt_neox.layers.1.attention.bias", "U8", {1, 1, 4, 4}, mask},
          {"gpt_neox.layers.0.attention.rotary_emb.inv_freq", "F16", {2}, std::string(4, '\0')},
          {"transformer.h.0.attn.bias", "U8", {1, 1, 4, 4}, mask},
          {"transformer.h.0.attn.masked_bias", "F8_E4M3", {}, std::string(1, '\0')},
          {"transformer.h.0.attn.c_attn.bias", "F32", {2}, floats_bytes(bias)},
      }));
  const auto reader = SafetensorsReader::open(dir.file("pythia.safetensors"));
  ASSERT_EQ(reader.entries().size(), 2u);
  EXPECT_EQ(reader.read("gpt_neox.layers.0.attention.dense.weight"), weight);
  EXPECT_EQ(reader.read("transformer.h.0.attn.c_attn.bias"), bias);
  EXPECT_EQ(reader.find("gpt_neox.layers.0.attention.bias"), nullptr);
  EXPECT_EQ(
      reader.skipped_buffers(),
      (std::vector<std::string>{
          "gpt_neox.layers.0.attention.bias", "gpt_neox.layers.0.attention.masked_bias",
          "gpt_neox.layers.0.attention.rotary_emb.inv_freq", "gpt_neox.layers.1.attention.bias",
          "transformer.h.0.attn.bias", "transformer.h.0.attn.masked_bias"}));
}

TEST(Safetensors, WeightOfUnsupportedDtypeIsRefusedByName) {
  ScratchDir dir;
  const std::string mask(4, '\1');
  // A weight stored as U8 beside a U8 mask: the mask is skipped, the weight
  // is refused when read, naming the file and the tensor.
  write_bytes(dir.file("u8.safetensors"),
              safetensors_file({
                  {"gpt_neox.layers.0.attention.bias", "U8", {1, 1, 2, 2}, mask},
                  {"gpt_neox.layers.0.attention.dense.weight", "U8", {2, 2}, mask},
              }));
  const auto u8 = SafetensorsReader::open(dir.file("u8.safetensors"));
  EXPECT_EQ(message_of([&] { u8.read("gpt_neox.layers.0.attention.dense.weight"); }),
            dir.file("u8.safetensors") +
                ": tensor gpt_neox.layers.0.attention.dense.weight: dtype U8 is not supported for "
                "a weight (F32, F16, BF16 or F64; tensors the loader does not read are skipped "
                "whatever their dtype)");
  // GPT-2's c_attn.bias ends in "attn.bias" but is a parameter.
  write_bytes(dir.file("bool.safetensors"),
              safetensors_file({{"transformer.h.0.attn.c_attn.bias", "BOOL", {4}, mask}}));
  const auto boolean = SafetensorsReader::open(dir.file("bool.safetensors"));
  EXPECT_TRUE(boolean.skipped_buffers().empty());
  EXPECT_NE(message_of([&] { boolean.read("transformer.h.0.attn.c_attn.bias"); })
                .find("bool.safetensors: tensor transformer.h.0.attn.c_attn.bias: dtype BOOL is "
                      "not supported for a weight"),
            std::string::npos);
  // A buffer is skipped whatever its dtype, not wherever its bytes are.
  write_bytes(
      dir.file("outside.safetensors"),
      safetensors_file(R"({"h.0.attn.bias":{"dtype":"BOOL","shape":[8],"data_offsets":[0,8]}})",
                       std::string(4, '\0')));
  EXPECT_NE(
      message_of([&] {
        SafetensorsReader::open(dir.file("outside.safetensors"));
      }).find("tensor h.0.attn.bias: data_offsets [0, 8] lie outside the file's 4 data bytes"),
      std::string::npos);
}

// A whole model directory as transformers' save_pretrained or a published
// checkpoint leaves it: config.json, the weights in float32 and the
// masks in U8 / BOOL, and tensors no mapping reads in other dtypes (I64
// position ids, U8 and I8 leftovers of other tools). HfPretrained opens it
// and reads every weight; one weight stored as I32 instead refuses the
// directory, naming the file and the tensor.
TEST(HfPretrained, DirectoryWithMaskBuffersLoadsAndAWeightInI32IsRefused) {
  config::ModelConfig m;
  m.vocab_size = 10;
  m.seq_len = 4;
  m.layers = 2;
  m.hidden = 8;
  m.heads = 2;
  m.mlp_ratio = 2;
  for (const bool rotary : {true, false}) {
    config::ModelConfig model = m;
    if (rotary) {
      model.position = "rotary";
      model.rotary_pct = 0.5;
      model.tie_embeddings = false;
      model.parallel_residual = true;
    }
    const HfArchitecture arch = rotary ? HfArchitecture::kGptNeoX : HfArchitecture::kGpt2;
    const auto mappings = tensor_mappings(arch, models::gpt_options(model));
    for (const bool i32_weight : {false, true}) {
      ScratchDir dir;
      write_bytes(dir.file("config.json"), hf_config_json(model));
      std::vector<RawTensor> tensors;
      std::map<std::string, std::vector<float>> written;  // by their name
      float next = 0.0f;
      for (const auto& t : mappings) {
        if (t.export_only) continue;
        int64_t count = 1;
        for (const int64_t d : t.their_shape) count *= d;
        std::vector<float>& values = written[t.theirs];
        for (int64_t i = 0; i < count; ++i) values.push_back(next += 0.25f);
        tensors.push_back({t.theirs, "F32", t.their_shape, floats_bytes(values)});
      }
      const std::string broken = rotary ? "gpt_neox.layers.1.mlp.dense_4h_to_h.weight"
                                        : "transformer.h.1.mlp.c_proj.weight";
      if (i32_weight)
        for (auto& t : tensors)
          if (t.name == broken) t.dtype = "I32";  // same bytes, so only the dtype is wrong
      for (int64_t layer = 0; layer < m.layers; ++layer) {
        const std::string prefix = rotary
                                       ? "gpt_neox.layers." + std::to_string(layer) + ".attention."
                                       : "transformer.h." + std::to_string(layer) + ".attn.";
        tensors.push_back(
            {prefix + "bias", layer == 0 ? "BOOL" : "U8", {1, 1, 4, 4}, std::string(16, '\1')});
        tensors.push_back({prefix + "masked_bias", "F32", {}, floats_bytes({-1e4f})});
        if (rotary)
          tensors.push_back({prefix + "rotary_emb.inv_freq", "F32", {1}, floats_bytes({1.0f})});
      }
      // Tensors the loader ignores, in dtypes it cannot read: skipped.
      tensors.push_back({"position_ids", "I64", {1, 4}, std::string(32, '\0')});
      tensors.push_back({"extra.rotary_emb.cos_cached", "U8", {2, 2}, std::string(4, '\2')});
      tensors.push_back({"lm_head.weight_format", "I8", {}, std::string(1, '\1')});
      write_bytes(dir.file("model.safetensors"), safetensors_file(tensors));
      if (i32_weight) {
        EXPECT_EQ(message_of([&] { HfPretrained::open(dir.path(), model); }),
                  dir.file("model.safetensors") + ": tensor " + broken +
                      ": dtype I32 is not supported for a weight (F32, F16, BF16 or F64; "
                      "tensors the loader does not read are skipped whatever their dtype)");
        continue;
      }
      const auto pretrained = HfPretrained::open(dir.path(), model);
      for (const auto& t : mappings) {
        if (t.export_only) continue;
        EXPECT_EQ(pretrained.weights(t.ours), from_hf(t, written[t.theirs], model.heads)) << t.ours;
      }
    }
  }
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
