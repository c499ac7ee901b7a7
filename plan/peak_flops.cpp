#include "plan/peak_flops.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "config/units.h"
#include "plan/device_profile.h"

namespace cmpi::plan {
namespace {

// run.peak_flops's device names and the device profiles (device_profile.h)
// that hold their datasheet peaks: one table for the planner and MFU.
struct DeviceName {
  const char* name;
  const char* profile;
};
constexpr DeviceName kDevices[] = {
    {"v100", "v100"}, {"a100", "a100-80gb"}, {"h100", "h100"}, {"h200", "h200"}};

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char ch) { return char(std::tolower(ch)); });
  return text;
}

}  // namespace

std::vector<std::string> known_devices() {
  std::vector<std::string> names;
  for (const DeviceName& d : kDevices) names.push_back(d.name);
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
  for (const DeviceName& d : kDevices) {
    if (text != d.name) continue;
    const DeviceProfile profile = load_device_profile(d.profile);
    const double peak = precision == config::Precision::kBf16   ? profile.peak_bf16
                        : precision == config::Precision::kFp16 ? profile.peak_fp16
                                                                : profile.peak_fp32;
    if (peak <= 0)
      throw std::invalid_argument(std::string(d.name) + " has no " + config::name_of(precision) +
                                  " rate to compare with (give FLOP/s per rank instead)");
    return {peak, std::string(d.name) + " " + config::name_of(precision) + " datasheet"};
  }
  std::vector<std::string> words = known_devices();
  words.insert(words.begin(), "auto");
  throw std::invalid_argument(config::unknown_word_message("device", spec, words) +
                              " or FLOP/s per rank (312e12)");
}

}  // namespace cmpi::plan
