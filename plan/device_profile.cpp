#include "plan/device_profile.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <stdexcept>

#include <yaml-cpp/yaml.h>

#include "config/units.h"
#include "config/yaml_reader.h"

namespace cmpi::plan {
namespace {

// The A100's GEMM efficiency by the GEMM's GFLOP. Its shape (rising with the
// work per GEMM, saturating for the largest) is the usual one of cuBLAS on
// tensor cores; its values were fitted on the Megatron-LM rows
// docs/planner.md marks as fitted (fp16, A100-80GB).
const std::vector<GemmEfficiencyPoint> kA100Gemm = {
    {1, 0.56}, {4, 0.65}, {16, 0.71}, {64, 0.73}, {256, 0.74}, {1024, 0.74}, {4096, 0.74}};

// Another device's curve: the A100's times `scale` (an assumption the
// validation does not reach; 1 for the A100s).
std::vector<GemmEfficiencyPoint> scaled_gemm(double scale) {
  std::vector<GemmEfficiencyPoint> out = kA100Gemm;
  for (GemmEfficiencyPoint& p : out) p.efficiency *= scale;
  return out;
}

// The device codecs measured on an H100 (docs/benchmarks.md: zfp rate 16 and
// mpc with dim auto, the slower settings, so that no preset is flattered),
// GB/s of input floats; other GPUs scale them by memory bandwidth.
constexpr double kH100Bandwidth = 3.35e12;
std::vector<DeviceCodecSpeed> h100_codecs(double bandwidth) {
  const double s = bandwidth / kH100Bandwidth;
  const bool measured = s == 1.0;
  return {{"zfp", 161e9 * s, 234e9 * s, measured},
          {"mpc", 18.0e9 * s, 95.1e9 * s, measured},
          {"fp16", 1132e9 * s, 1135e9 * s, measured},
          {"bf16", 1217e9 * s, 1166e9 * s, measured},
          {"sign", 221e9 * s, 497e9 * s, measured}};
}

DeviceProfile gpu(const char* name, double fp32, double bf16, double fp16, double memory_gb,
                  double bandwidth, double gemm_scale, bool flash, const char* source) {
  DeviceProfile d;
  d.name = name;
  d.source = source;
  d.peak_fp32 = fp32 * 1e12;
  d.peak_bf16 = bf16 * 1e12;
  d.peak_fp16 = fp16 * 1e12;
  d.memory_bytes = memory_gb * 1e9;
  d.memory_bytes_per_s = bandwidth;
  d.gemm_efficiency = scaled_gemm(gemm_scale);
  d.flash_attention = flash;
  // FlashAttention-2 (Dao, 2023) reports its forward and backward at 50-73 %
  // of the A100's peak; the middle of that range.
  d.flash_attention_efficiency = flash ? 0.6 : 0;
  d.codecs = h100_codecs(bandwidth);
  return d;
}

std::vector<DeviceProfile> builtin_profiles() {
  DeviceProfile cpu;
  cpu.name = "cpu";
  cpu.source = "measured here on one layer of the model";
  return {
      // V100 SXM2 32 GB: no bf16 tensor path; FlashAttention-2 needs sm_80.
      gpu("v100", 15.7, 0, 125, 32, 0.9e12, 1.0, false, "NVIDIA V100 datasheet (SXM2)"),
      gpu("a100-40gb", 19.5, 312, 312, 40, 1.555e12, 1.0, true,
          "NVIDIA A100 datasheet (SXM4 40GB)"),
      gpu("a100-80gb", 19.5, 312, 312, 80, 2.039e12, 1.0, true,
          "NVIDIA A100 datasheet (SXM4 80GB)"),
      // Hopper's dense fp16 GEMMs reach a smaller share of its peak than
      // Ampere's: 0.85 of the A100's curve assumed.
      gpu("h100", 67, 989.4, 989.4, 80, 3.35e12, 0.85, true, "NVIDIA H100 datasheet (SXM5)"),
      gpu("h200", 67, 989.4, 989.4, 141, 4.8e12, 0.85, true, "NVIDIA H200 datasheet (SXM)"),
      cpu,
  };
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char ch) { return char(std::tolower(ch)); });
  return text;
}

double read_positive(config::MapReader& r, const std::string& key, double fallback) {
  double value = fallback;
  r.read(key, value, {0, 1e30, true, false});
  return value;
}

std::vector<GemmEfficiencyPoint> read_gemm_table(config::MapReader& r) {
  const YAML::Node node = r.take("gemm_efficiency");
  const std::string path = r.key_path("gemm_efficiency");
  std::vector<GemmEfficiencyPoint> table;
  if (!node.IsDefined() || node.IsNull())
    r.fail("gemm_efficiency", "required: a list of [GFLOP per GEMM, efficiency] pairs");
  if (!node.IsSequence())
    r.context().fail(path, node, "expected a list of [GFLOP per GEMM, efficiency] pairs");
  for (const YAML::Node& item : node) {
    const auto number = [&](const YAML::Node& n) {
      const auto v = n.IsScalar() ? config::parse_real(n.Scalar()) : std::nullopt;
      if (!v) r.context().fail(path, n, "expected a number");
      return *v;
    };
    if (!item.IsSequence() || item.size() != 2)
      r.context().fail(path, item, "each entry is [GFLOP per GEMM, efficiency]");
    GemmEfficiencyPoint p{number(item[0]), number(item[1])};
    if (!(p.gflop > 0) || !(p.efficiency > 0 && p.efficiency <= 1))
      r.context().fail(path, item, "the GFLOP must be > 0 and the efficiency in (0, 1]");
    if (!table.empty() && p.gflop <= table.back().gflop)
      r.context().fail(path, item, "the GFLOP must ascend");
    table.push_back(p);
  }
  if (table.empty()) r.fail("gemm_efficiency", "needs at least one [GFLOP, efficiency] pair");
  return table;
}

std::vector<DeviceCodecSpeed> read_codecs(config::MapReader& r) {
  const YAML::Node node = r.take("codecs");
  std::vector<DeviceCodecSpeed> out;
  if (!node.IsDefined() || node.IsNull()) return out;
  const std::string path = r.key_path("codecs");
  if (!node.IsSequence())
    r.context().fail(path, node, "expected a list of {codec, encode, decode} (bytes/s)");
  for (size_t i = 0; i < node.size(); ++i) {
    config::MapReader item(node[i], path + "[" + std::to_string(i) + "]", r.context());
    DeviceCodecSpeed speed;
    item.read("codec", speed.codec);
    speed.encode_bytes_per_s = read_positive(item, "encode", 0);
    speed.decode_bytes_per_s = read_positive(item, "decode", 0);
    if (speed.encode_bytes_per_s <= 0 || speed.decode_bytes_per_s <= 0)
      item.fail("encode", "encode and decode (bytes of input floats per second) are required");
    speed.measured = true;
    item.finish();
    out.push_back(speed);
  }
  return out;
}

DeviceProfile read_profile_file(const std::string& file) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(file);
  } catch (const YAML::Exception& e) {
    throw std::invalid_argument("--plan-device " + file + ": not a YAML file: " + e.what());
  }
  config::ReadContext context(file);
  config::MapReader r(root, "", context);
  DeviceProfile d;
  r.read("name", d.name);
  d.source = file;
  config::MapReader peaks = r.section("peak_flops");
  d.peak_fp32 = read_positive(peaks, "fp32", 0);
  d.peak_bf16 = read_positive(peaks, "bf16", 0);
  d.peak_fp16 = read_positive(peaks, "fp16", 0);
  peaks.finish();
  if (d.peak_fp32 + d.peak_bf16 + d.peak_fp16 <= 0)
    r.fail("peak_flops", "give at least one of fp32, bf16, fp16 (dense FLOP/s)");
  int64_t memory = 0;
  r.read_size("memory", memory);
  d.memory_bytes = double(memory);
  d.memory_bytes_per_s = read_positive(r, "memory_bandwidth", 0);
  if (d.memory_bytes_per_s <= 0) r.fail("memory_bandwidth", "required: bytes per second");
  d.memory_efficiency = read_positive(r, "memory_efficiency", d.memory_efficiency);
  if (d.memory_efficiency > 1) r.fail("memory_efficiency", "a fraction of the bandwidth, <= 1");
  d.gemm_efficiency = read_gemm_table(r);
  r.read("flash_attention", d.flash_attention);
  d.flash_attention_efficiency = read_positive(r, "flash_attention_efficiency", 0);
  d.codecs = read_codecs(r);
  // Unknown keys first: a misspelt key reads as the one it meant to be.
  r.finish();
  if (d.flash_attention && !(d.flash_attention_efficiency > 0 && d.flash_attention_efficiency <= 1))
    r.fail("flash_attention_efficiency",
           "with flash_attention: true, a fraction of the peak in (0, 1]");
  return d;
}

}  // namespace

double DeviceProfile::peak_for(config::Precision precision) const {
  const double peak = precision == config::Precision::kBf16   ? peak_bf16
                      : precision == config::Precision::kFp16 ? peak_fp16
                                                              : peak_fp32;
  if (!(peak > 0))
    throw std::invalid_argument("--plan-device " + name + " has no " + config::name_of(precision) +
                                " rate (training.precision)");
  return peak;
}

double DeviceProfile::gemm_efficiency_at(double flops) const {
  const double gflop = flops / 1e9;
  const auto& t = gemm_efficiency;
  if (gflop <= t.front().gflop) return t.front().efficiency;
  if (gflop >= t.back().gflop) return t.back().efficiency;
  size_t i = 1;
  while (t[i].gflop < gflop) ++i;
  const double x = (std::log2(gflop) - std::log2(t[i - 1].gflop)) /
                   (std::log2(t[i].gflop) - std::log2(t[i - 1].gflop));
  return t[i - 1].efficiency + x * (t[i].efficiency - t[i - 1].efficiency);
}

const DeviceCodecSpeed* DeviceProfile::codec_speed(const std::string& codec) const {
  for (const DeviceCodecSpeed& c : codecs)
    if (c.codec == codec) return &c;
  return nullptr;
}

std::vector<std::string> builtin_device_names() {
  std::vector<std::string> names;
  for (const DeviceProfile& d : builtin_profiles()) names.push_back(d.name);
  return names;
}

DeviceProfile load_device_profile(const std::string& name_or_file) {
  const std::string name = lower(name_or_file);
  for (const DeviceProfile& d : builtin_profiles())
    if (d.name == name) return d;
  if (std::ifstream(name_or_file).good()) {
    try {
      return read_profile_file(name_or_file);
    } catch (const config::ConfigError& e) {
      throw std::invalid_argument(std::string("--plan-device: ") + e.what());
    }
  }
  throw std::invalid_argument(
      "--plan-device: " +
      config::unknown_word_message("device", name_or_file, builtin_device_names()) +
      ", or a YAML file describing one (docs/planner.md)");
}

}  // namespace cmpi::plan
