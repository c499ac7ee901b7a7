#include "bench/codec_settings.h"

#include <cstdio>
#include <map>

namespace cmpi::bench {
namespace {

CodecSetting plain(std::string spec, bool quick = false) {
  return CodecSetting{std::move(spec), "", 0, quick};
}

CodecSetting relative(std::string spec, std::string param, double factor, bool quick = false) {
  return CodecSetting{std::move(spec), std::move(param), factor, quick};
}

// Per codec name: the sweep that answers the questions the project asks of
// it (error per zfp rate, which 4x setting keeps RMSE under 5 %, how sparse a
// sparsifier can go). Quick entries give the smoke test one or two each.
std::map<std::string, std::vector<CodecSetting>> settings_table() {
  std::map<std::string, std::vector<CodecSetting>> table;
  table["identity"] = {plain("identity", true)};
  auto& zfp = table["zfp"];
  for (int rate : {4, 6, 8, 10, 12, 16, 20, 24}) {
    zfp.push_back(plain("zfp:mode=rate,rate=" + std::to_string(rate), rate == 8));
    // The same bytes through libzfp, beside the native coder (impl: native).
    if (rate == 8 || rate == 16)
      zfp.push_back(plain("zfp:mode=rate,rate=" + std::to_string(rate) + ",impl=libzfp"));
  }
  zfp.push_back(relative("zfp:mode=accuracy", "tolerance", 1e-2));
  zfp.push_back(relative("zfp:mode=accuracy", "tolerance", 1e-3));
  zfp.push_back(plain("zfp:mode=precision,precision=16"));
  zfp.push_back(plain("zfp:mode=reversible", true));
  table["mpc"] = {plain("mpc:dim=1", true), plain("mpc:dim=auto")};
  table["fp16"] = {plain("fp16", true)};
  table["bf16"] = {plain("bf16", true)};
  table["fp8"] = {plain("fp8:format=e4m3", true), plain("fp8:format=e5m2"),
                  plain("fp8:format=e4m3,block=32")};
  table["topk"] = {plain("topk:ratio=0.001"), plain("topk:ratio=0.01", true),
                   plain("topk:ratio=0.1")};
  table["sidco"] = {plain("sidco:density=0.001"), plain("sidco:density=0.01", true),
                    plain("sidco:density=0.01,fit=exponential,stages=1"),
                    plain("sidco:density=0.1")};
  table["block_sparse"] = {plain("block_sparse", true)};
  table["randomk"] = {plain("randomk:ratio=0.01", true), plain("randomk:ratio=0.1")};
  table["threshold"] = {relative("threshold", "threshold", 2.0, true),
                        relative("threshold", "threshold", 3.0)};
  // levels=127 is the 8-bit (4x) budget; per-bucket max scaling or smaller
  // buckets are what bring its error under 5 %.
  table["qsgd"] = {plain("qsgd:levels=4"),
                   plain("qsgd:levels=16", true),
                   plain("qsgd:levels=64"),
                   plain("qsgd:levels=127"),
                   plain("qsgd:levels=127,bucket=128"),
                   plain("qsgd:levels=127,norm=max")};
  table["natural"] = {plain("natural", true)};
  table["sign"] = {plain("sign", true)};
  return table;
}

}  // namespace

std::vector<CodecSetting> settings_for(const std::string& codec_name, bool quick) {
  const auto table = settings_table();
  auto it = table.find(codec_name);
  if (it == table.end()) return {plain(codec_name, true)};
  if (!quick) return it->second;
  std::vector<CodecSetting> subset;
  for (const auto& setting : it->second)
    if (setting.quick) subset.push_back(setting);
  return subset.empty() ? std::vector<CodecSetting>{it->second.front()} : subset;
}

compress::CodecSpec resolve(const CodecSetting& setting, double data_rms) {
  compress::CodecSpec spec = compress::CodecSpec::parse(setting.spec);
  if (!setting.rms_param.empty()) {
    char value[32];
    std::snprintf(value, sizeof value, "%.3g", setting.rms_factor * data_rms);
    spec.set(setting.rms_param, value);
  }
  return spec;
}

}  // namespace cmpi::bench
