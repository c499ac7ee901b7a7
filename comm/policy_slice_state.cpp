// PolicySlice's codec state for checkpoints. Works as follows: every route
// with a codec is named by its rule index and codec spec ("rule<i>:<spec>");
// the route's error-feedback residuals are listed under that name plus their
// buffer key in hex, its codec's random generator under the name alone.
// Restoring groups the saved residuals by route name, so a route's residuals
// are replaced as a whole (no mix of saved and fresh keys). An adaptive
// rule's candidates share one residual store, named "rule<i>:auto"; their
// generators are named "rule<i>:auto:<spec>". Which candidate was chosen is
// the adaptive policy's to save (comm/adaptive_policy_state.cpp).
#include <cstdio>
#include <stdexcept>

#include "comm/policy.h"

namespace cmpi::comm {
namespace {

std::string route_key(const PolicySlice::Route& route) {
  return "rule" + std::to_string(route.rule) + ":" + route.codec->spec().to_string();
}

std::string auto_store_key(const PolicySlice::AutoRule& rule) {
  return "rule" + std::to_string(rule.rule) + ":auto";
}

std::string auto_random_key(const PolicySlice::AutoRule& rule, const PolicySlice::Route& route) {
  return auto_store_key(rule) + ":" + route.codec->spec().to_string();
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
  for (const AutoRule& rule : auto_rules_) {
    for (const auto& [key, residual] : *rule.residuals)
      state.residuals[auto_store_key(rule) + "/" + buffer_key_hex(key)] = residual;
    for (const Route& route : rule.candidates) {
      if (route.codec == nullptr) continue;
      auto random = route.codec->random_state();
      if (!random.empty()) state.random_states[auto_random_key(rule, route)] = std::move(random);
    }
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
  std::map<std::string, Route*> auto_random_routes;
  for (AutoRule& rule : auto_rules_) {
    residuals_of[auto_store_key(rule)];
    for (Route& route : rule.candidates)
      if (route.codec != nullptr) {
        known_random[auto_random_key(rule, route)] = !route.codec->random_state().empty();
        auto_random_routes[auto_random_key(rule, route)] = &route;
      }
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
  for (AutoRule& rule : auto_rules_) *rule.residuals = residuals_of[auto_store_key(rule)];
  for (auto& [name, route] : auto_random_routes) {
    const auto random = state.random_states.find(name);
    if (random == state.random_states.end() || !known_random[name]) continue;
    try {
      route->codec->restore_random_state(random->second);
    } catch (const std::invalid_argument& error) {
      throw std::invalid_argument("codec state " + name + ": " + error.what());
    }
  }
  return dropped;
}

}  // namespace cmpi::comm
