#include "plan/cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <vector>

#include "comm/clock.h"
#include "compress/codec.h"
#include "compress/codec_registry.h"
#include "compress/codec_spec.h"

namespace cmpi::plan {
namespace {

// "25gbit" -> bits/s; "5us" -> s. Returns false on anything else.
bool parse_number_with_unit(const std::string& text,
                            const std::vector<std::pair<std::string, double>>& units, double& out) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    return false;
  }
  std::string unit = text.substr(used);
  for (char& ch : unit) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  for (const auto& [name, scale] : units)
    if (unit == name) {
      out = value * scale;
      return value >= 0 && std::isfinite(out);
    }
  return false;
}

}  // namespace

Link Link::parse(const std::string& text, const std::string& what) {
  const std::vector<std::pair<std::string, double>> rates = {
      {"bit", 1}, {"kbit", 1e3}, {"mbit", 1e6}, {"gbit", 1e9}, {"tbit", 1e12}};
  const std::vector<std::pair<std::string, double>> times = {
      {"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}};
  const size_t slash = text.find('/');
  Link link;
  link.latency_seconds = 0;
  const bool ok = parse_number_with_unit(text.substr(0, slash), rates, link.bits_per_second) &&
                  link.bits_per_second > 0 &&
                  (slash == std::string::npos ||
                   parse_number_with_unit(text.substr(slash + 1), times, link.latency_seconds));
  if (!ok)
    throw std::invalid_argument(
        what + ": expected RATE[/LATENCY] like 25gbit/5us or 200mbit/1ms, got '" + text + "'");
  return link;
}

std::string Link::to_string() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g Gbit/s, %.3g us", bits_per_second / 1e9,
                latency_seconds * 1e6);
  return buf;
}

const CodecCost& CodecCostTable::cost(const compress::CodecSpec& spec) {
  const std::string key = spec.to_string();
  auto it = measured_.find(key);
  if (it != measured_.end()) return it->second;

  constexpr size_t kFloats = size_t(1) << 20;
  std::vector<float> data(kFloats), decoded(kFloats);
  std::mt19937_64 rng(12345);
  std::exponential_distribution<float> magnitude(1000.0f);
  std::bernoulli_distribution sign(0.5);
  for (float& x : data) x = sign(rng) ? magnitude(rng) : -magnitude(rng);

  auto codec = compress::CodecRegistry::with_builtin_codecs().create(spec);
  std::vector<uint8_t> payload(codec->max_encoded_bytes(kFloats));
  size_t size = codec->encode(data.data(), kFloats, payload.data(), payload.size());  // warm-up
  double encode_s = 1e30, decode_s = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    auto start = comm::Clock::now();
    size = codec->encode(data.data(), kFloats, payload.data(), payload.size());
    encode_s = std::min(encode_s, comm::seconds_since(start));
    start = comm::Clock::now();
    codec->decode(payload.data(), size, decoded.data(), kFloats);
    decode_s = std::min(decode_s, comm::seconds_since(start));
  }
  const double raw = double(kFloats * sizeof(float));
  CodecCost c;
  c.ratio = double(size) / raw;
  c.encode_bytes_per_s = raw / std::max(encode_s, 1e-9) * codec_scale_;
  c.decode_bytes_per_s = raw / std::max(decode_s, 1e-9) * codec_scale_;
  for (const DeviceCodecSpeed& device : device_speeds_)
    if (device.codec == spec.name()) {
      c.encode_bytes_per_s = device.encode_bytes_per_s;
      c.decode_bytes_per_s = device.decode_bytes_per_s;
    }
  double error = 0, norm = 0;
  for (size_t i = 0; i < kFloats; ++i) {
    error += double(decoded[i] - data[i]) * double(decoded[i] - data[i]);
    norm += double(data[i]) * double(data[i]);
  }
  c.rel_error = norm > 0 ? std::sqrt(error / norm) : 0;
  return measured_.emplace(key, c).first->second;
}

}  // namespace cmpi::plan
