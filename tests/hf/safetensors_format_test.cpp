// Hugging Face's safetensors files (hf/safetensors_reader.h, torch-free):
// read back (float32 written by io/, half and bfloat16 written by hand from
// their bit patterns), malformed files refused naming the file and the
// tensor; mask and inv_freq buffers (U8, BOOL, ...) skipped by name while a
// weight in such a dtype is refused, in one file and through a whole model
// directory (HfPretrained).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "hf/hf_pretrained.h"
#include "hf/hf_tensor_map.h"
#include "hf/safetensors_reader.h"
#include "io/safetensors_writer.h"
#include "models/family/gpt_family.h"
#include "tests/hf/error_message.h"
#include "tests/io/scratch_dir.h"
#include "tests/support/test_seed.h"

namespace cmpi::hf {
namespace {

using io::testing::ScratchDir;
using testing::message_of;

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

}  // namespace
}  // namespace cmpi::hf
