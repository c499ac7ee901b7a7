// What the config tests share: a fixture that writes YAML into a fresh
// temporary directory, and helpers that take an error message apart.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "config/config_loader.h"
#include "launch/checked_config.h"
#include "launch/config_warnings.h"
#include "launch/memory_preflight.h"
#include "models/family/model_family.h"

namespace cmpi::config::config_testing {

namespace fs = std::filesystem;

// The config as a run loads it: the keys' checks and every domain's
// (launch/checked_config.h), which are what these tests hold to account.
using launch::config_warnings;
using launch::load_checked_config;
using launch::memory_fit_error;
using launch::parse_checked_config;
using launch::validate_layout;
using models::estimate_memory;

// 1-based line of the first occurrence of `needle` in `text`.
inline int line_of(const std::string& text, const std::string& needle) {
  const size_t at = text.find(needle);
  EXPECT_NE(at, std::string::npos) << "test bug: '" << needle << "' not in the YAML";
  return 1 + int(std::count(text.begin(), text.begin() + std::min(at, text.size()), '\n'));
}

// The ConfigError message of `action`, or a test failure if it does not throw one.
inline std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const ConfigError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected a ConfigError, got another exception: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected a ConfigError, nothing was thrown";
  return "";
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "message: " << (haystack)

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("cmpi_config_test_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes `text` to <temp>/<name> and returns the path.
  std::string write(const std::string& text, const std::string& name = "run.yaml") {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }

  // Loads `text` from a file and returns the error message it gives.
  std::string load_error(const std::string& text, const std::vector<std::string>& overrides = {}) {
    const std::string path = write(text);
    return error_of([&] { load_checked_config(path, overrides); });
  }

  // Expects loading `text` to fail with a message "<file>:<line>: <key>: ..."
  // (the line being that of `line_needle`) containing `detail`.
  void expect_error_at(const std::string& text, const std::string& line_needle,
                       const std::string& key, const std::string& detail) {
    const std::string path = write(text);
    const std::string message = error_of([&] { load_checked_config(path, {}); });
    const std::string prefix =
        path + ":" + std::to_string(line_of(text, line_needle)) + ": " + key + ": ";
    EXPECT_EQ(message.rfind(prefix, 0), 0u)
        << "expected prefix: " << prefix << "\nmessage: " << message;
    EXPECT_CONTAINS(message, detail);
  }

  fs::path dir_;
};

}  // namespace cmpi::config::config_testing
