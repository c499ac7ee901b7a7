#include "compress/codec_spec.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <sstream>

namespace cmpi::compress {

CodecSpec CodecSpec::parse(const std::string& text) {
  auto colon = text.find(':');
  CodecSpec spec(text.substr(0, colon));
  if (spec.name_.empty()) throw CodecError("codec spec '" + text + "': empty codec name");
  if (colon == std::string::npos) return spec;
  std::stringstream rest(text.substr(colon + 1));
  std::string item;
  while (std::getline(rest, item, ',')) {
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw CodecError("codec spec '" + text + "': expected key=value, got '" + item + "'");
    spec.params_[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return spec;
}

CodecSpec& CodecSpec::set(const std::string& key, const std::string& value) {
  params_[key] = value;
  return *this;
}

void CodecSpec::fail_param(const std::string& key, const std::string& why) const {
  throw CodecError("codec '" + name_ + "': parameter '" + key + "' " + why);
}

std::string CodecSpec::get_string(const std::string& key, const std::string& fallback) const {
  auto it = params_.find(key);
  return it == params_.end() ? fallback : it->second;
}

double CodecSpec::get_double(const std::string& key, double fallback) const {
  auto it = params_.find(key);
  if (it == params_.end()) return fallback;
  const char* begin = it->second.c_str();
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(begin, &end);
  if (end == begin || *end != '\0' || errno == ERANGE)
    fail_param(key, "must be a number, got '" + it->second + "'");
  return value;
}

int64_t CodecSpec::get_int(const std::string& key, int64_t fallback) const {
  auto it = params_.find(key);
  if (it == params_.end()) return fallback;
  const char* begin = it->second.c_str();
  char* end = nullptr;
  errno = 0;
  long long value = std::strtoll(begin, &end, 10);
  if (end == begin || *end != '\0' || errno == ERANGE)
    fail_param(key, "must be an integer, got '" + it->second + "'");
  return value;
}

bool CodecSpec::get_bool(const std::string& key, bool fallback) const {
  auto it = params_.find(key);
  if (it == params_.end()) return fallback;
  if (it->second == "true" || it->second == "1") return true;
  if (it->second == "false" || it->second == "0") return false;
  fail_param(key, "must be true or false, got '" + it->second + "'");
}

void CodecSpec::require_only(const std::vector<std::string>& known) const {
  for (const auto& [key, value] : params_) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    fail_param(key, "is unknown (known: " + (list.empty() ? std::string("none") : list) + ")");
  }
}

std::string CodecSpec::to_string() const {
  std::string out = "{name: " + name_;
  for (const auto& [key, value] : params_) out += ", " + key + ": " + value;
  return out + "}";
}

}  // namespace cmpi::compress
