// CodecSpec: a codec's name plus its parameters, as written in YAML
// (`{name: zfp, mode: rate, rate: 16}`). Parameters stay strings until the
// codec's factory reads them through the typed getters, which name the
// parameter and the codec in every error.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace cmpi::compress {

// A codec spec that cannot be built: unknown codec, unknown or bad parameter.
class CodecError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

class CodecSpec {
 public:
  CodecSpec() = default;
  explicit CodecSpec(std::string name, std::map<std::string, std::string> params = {})
      : name_(std::move(name)), params_(std::move(params)) {}

  // Parses "zfp:mode=rate,rate=16" or "mpc" (used by CLIs and tests).
  static CodecSpec parse(const std::string& text);

  const std::string& name() const { return name_; }
  const std::map<std::string, std::string>& params() const { return params_; }
  bool has(const std::string& key) const { return params_.count(key) != 0; }
  CodecSpec& set(const std::string& key, const std::string& value);

  std::string get_string(const std::string& key, const std::string& fallback) const;
  double get_double(const std::string& key, double fallback) const;
  int64_t get_int(const std::string& key, int64_t fallback) const;
  bool get_bool(const std::string& key, bool fallback) const;

  // Throws CodecError if a parameter outside `known` is present.
  void require_only(const std::vector<std::string>& known) const;

  // "{name: zfp, mode: rate, rate: 16}"
  std::string to_string() const;

 private:
  [[noreturn]] void fail_param(const std::string& key, const std::string& why) const;

  std::string name_;
  std::map<std::string, std::string> params_;
};

}  // namespace cmpi::compress
