// PolicySlice's codec state for checkpoints. Works as follows: every route
// with a codec is named by its rule index and codec spec ("rule<i>:<spec>");
// the route's error-feedback residuals are listed under that name plus their
// buffer key in hex, its codec's random generator under the name alone.
// Restoring groups the saved residuals by route name, so a route's residuals
// are replaced as a whole (no mix of saved and fresh keys).
#include <cstdio>
#include <stdexcept>

#include "comm/policy.h"

namespace cmpi::comm {
namespace {

std::string route_key(const PolicySlice::Route& route) {
  return "rule" + std::to_string(route.rule) + ":" + route.codec->spec().to_string();
}

std::string buffer_key_hex(uint64_t key) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)key);
  return hex;
}

}  // namespace

CodecState PolicySlice::codec_state() const {
  CodecState state;
  for (const Route& route : routes_) {
    if (route.codec == nullptr) continue;
    const std::string name = route_key(route);
    auto random = route.codec->random_state();
    if (!random.empty()) state.random_states[name] = std::move(random);
    if (route.feedback == nullptr) continue;
    for (const auto& [key, residual] : route.feedback->residuals())
      state.residuals[name + "/" + buffer_key_hex(key)] = residual;
  }
  return state;
}

std::vector<std::string> PolicySlice::restore_codec_state(const CodecState& state) {
  std::map<std::string, std::map<uint64_t, std::vector<float>>> residuals_of;  // by route key
  std::map<std::string, bool> known_random;
  for (const Route& route : routes_)
    if (route.codec != nullptr) {
      if (route.feedback != nullptr) residuals_of[route_key(route)];
      known_random[route_key(route)] = !route.codec->random_state().empty();
    }

  std::vector<std::string> dropped;
  for (const auto& [key, values] : state.residuals) {
    const size_t slash = key.rfind('/');
    const auto found =
        slash == std::string::npos ? residuals_of.end() : residuals_of.find(key.substr(0, slash));
    if (found == residuals_of.end() || key.size() - slash - 1 != 16) {
      dropped.push_back(key);
      continue;
    }
    found->second[std::stoull(key.substr(slash + 1), nullptr, 16)] = values;
  }
  for (const auto& [key, words] : state.random_states) {
    const auto found = known_random.find(key);
    if (found == known_random.end() || !found->second) dropped.push_back(key);
  }

  for (Route& route : routes_) {
    if (route.codec == nullptr) continue;
    const std::string name = route_key(route);
    const auto random = state.random_states.find(name);
    if (random != state.random_states.end() && known_random[name]) {
      try {
        route.codec->restore_random_state(random->second);
      } catch (const std::invalid_argument& error) {
        throw std::invalid_argument("codec state " + name + ": " + error.what());
      }
    }
    if (route.feedback != nullptr) route.feedback->import_residuals(residuals_of[name]);
  }
  return dropped;
}

}  // namespace cmpi::comm
