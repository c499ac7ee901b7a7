// A run's config YAML through the typed loader (config/config_loader.h):
// either a Config, or a ConfigError naming the file. A config that loads
// must also survive its own resolved form: to_yaml(config) reads back
// (what --print-config promises).
#include <cstddef>
#include <cstdint>
#include <string>

#include "bench/fuzz/fuzz_check.h"
#include "config/config_loader.h"

using cmpi::config::ConfigError;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  cmpi::config::Config config;
  try {
    config = cmpi::config::parse_config(text, cmpi::fuzz::kLabel);
  } catch (const ConfigError& e) {
    cmpi::fuzz::require_labelled(e.what());
    return 0;
  }
  const std::string resolved = cmpi::config::to_yaml(config);
  try {
    cmpi::config::parse_config(resolved, "resolved");
  } catch (const ConfigError& e) {
    cmpi::fuzz::defect(std::string("the resolved config of an accepted one is refused: ") +
                       e.what() + "\n--- resolved ---\n" + resolved);
  }
  return 0;
}
