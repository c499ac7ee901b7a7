#include "plan/peak_flops.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "config/units.h"

namespace cmpi::plan {
namespace {

struct DevicePeak {
  const char* name;
  // Dense TFLOP/s per precision; 0: the device has no such tensor path.
  double fp32, bf16, fp16;
};

// NVIDIA's datasheet figures without structured sparsity (peak_flops.h).
constexpr DevicePeak kDevices[] = {
    {"v100", 15.7, 0, 125},
    {"a100", 19.5, 312, 312},
    {"h100", 67, 989.4, 989.4},
    {"h200", 67, 989.4, 989.4},
};

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char ch) { return char(std::tolower(ch)); });
  return text;
}

}  // namespace

std::vector<std::string> known_devices() {
  std::vector<std::string> names;
  for (const DevicePeak& d : kDevices) names.push_back(d.name);
  return names;
}

PeakFlops resolve_peak_flops(const std::string& spec, config::Precision precision) {
  const std::string text = lower(spec);
  if (text.empty() || text == "auto") return {0, "measured"};
  if (const auto number = config::parse_real(spec)) {
    if (!(*number > 0))
      throw std::invalid_argument("must be auto, a device name or FLOP/s per rank > 0, got " +
                                  spec);
    return {*number, "run.peak_flops"};
  }
  for (const DevicePeak& d : kDevices) {
    if (text != d.name) continue;
    const double tflops = precision == config::Precision::kBf16   ? d.bf16
                          : precision == config::Precision::kFp16 ? d.fp16
                                                                  : d.fp32;
    if (tflops <= 0)
      throw std::invalid_argument(std::string(d.name) + " has no " + config::name_of(precision) +
                                  " rate to compare with (give FLOP/s per rank instead)");
    return {tflops * 1e12, std::string(d.name) + " " + config::name_of(precision) + " datasheet"};
  }
  std::vector<std::string> words = known_devices();
  words.insert(words.begin(), "auto");
  throw std::invalid_argument(config::unknown_word_message("device", spec, words) +
                              " or FLOP/s per rank (312e12)");
}

}  // namespace cmpi::plan
