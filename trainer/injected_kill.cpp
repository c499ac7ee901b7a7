#include "trainer/injected_kill.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <vector>

namespace cmpi::trainer {
namespace {

constexpr const char* kSpecVariable = "CMPI_TEST_KILL_AT_STEP";
constexpr const char* kAttemptVariable = "CMPI_RUN_ATTEMPT";

// A whole number in [min, 2^40], or throws naming `variable` and `text`.
int64_t parse_whole(const std::string& text, int64_t min, const std::string& variable,
                    const std::string& whole_text) {
  size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || value < min || value > (int64_t(1) << 40))
    throw std::invalid_argument(variable + "='" + whole_text + "': '" + text +
                                "' is not a whole number >= " + std::to_string(min));
  return value;
}

}  // namespace

InjectedKill injected_kill_for(const std::string& spec, const std::string& attempt_text) {
  const int64_t attempt =
      attempt_text.empty() ? 1 : parse_whole(attempt_text, 1, kAttemptVariable, attempt_text);
  if (spec.empty()) return {};
  std::vector<InjectedKill> per_attempt;
  size_t start = 0;
  while (start <= spec.size()) {
    const size_t comma = std::min(spec.find(',', start), spec.size());
    const std::string entry = spec.substr(start, comma - start);
    const size_t colon = entry.find(':');
    if (colon == std::string::npos)
      throw std::invalid_argument(std::string(kSpecVariable) + "='" + spec + "': entry '" + entry +
                                  "' is not RANK:STEP");
    InjectedKill kill;
    kill.rank = int(parse_whole(entry.substr(0, colon), 0, kSpecVariable, spec));
    kill.step = parse_whole(entry.substr(colon + 1), 1, kSpecVariable, spec);
    per_attempt.push_back(kill);
    start = comma + 1;
  }
  if (attempt > int64_t(per_attempt.size())) return {};
  return per_attempt[size_t(attempt - 1)];
}

InjectedKill injected_kill_from_environment() {
  const char* spec = std::getenv(kSpecVariable);
  const char* attempt = std::getenv(kAttemptVariable);
  return injected_kill_for(spec ? spec : "", attempt ? attempt : "");
}

}  // namespace cmpi::trainer
