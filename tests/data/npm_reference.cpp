// npm install bounded in time (offline, npm retries for minutes, and a test
// must then be skipped rather than killed by CTest's timeout); node run on
// files so that no text passes through a shell.
#include "tests/data/npm_reference.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace cmpi::data::testing {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (uint8_t(c) < 0x20) {
      char escape[8];
      std::snprintf(escape, sizeof escape, "\\u%04x", unsigned(uint8_t(c)));
      out += escape;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string install_npm_packages(const std::string& npm_dir,
                                 const std::vector<std::string>& packages,
                                 const std::string& ready_file) {
  if (std::system("node --version > /dev/null 2>&1") != 0) return "node is not installed";
  if (std::filesystem::exists(ready_file)) return "";
  if (std::system("npm --version > /dev/null 2>&1") != 0) return "npm is not installed";
  std::filesystem::create_directories(npm_dir);
  const std::string log = npm_dir + "/npm-install.log";
  std::string command = "timeout 120 npm install --prefix '" + npm_dir +
                        "' --no-audit --no-fund --no-save --fetch-retries=1 "
                        "--fetch-timeout=30000";
  std::string names;
  for (const std::string& p : packages) {
    command += " '" + p + "'";
    names += (names.empty() ? "" : ", ") + p;
  }
  command += " > '" + log + "' 2>&1";
  if (std::system(command.c_str()) != 0 || !std::filesystem::exists(ready_file)) {
    return "npm could not fetch " + names + " (log: " + log + "):\n" + read_all(log);
  }
  return "";
}

JsonValue run_node(const std::string& npm_dir, const std::string& name, const std::string& script,
                   const std::vector<std::string>& texts) {
  const std::string input = npm_dir + "/texts.json", output = npm_dir + "/answer.json",
                    script_path = npm_dir + "/" + name + ".js";
  {
    std::ofstream out(input, std::ios::binary);
    out << "[";
    for (size_t i = 0; i < texts.size(); ++i) out << (i ? "," : "") << json_string(texts[i]);
    out << "]";
  }
  {
    std::ofstream out(script_path, std::ios::binary);
    out << script;
  }
  std::filesystem::remove(output);
  const std::string command =
      "cd '" + npm_dir + "' && node '" + script_path + "' '" + input + "' '" + output + "'";
  if (std::system(command.c_str()) != 0) throw std::runtime_error("node failed: " + command);
  return JsonValue::parse(read_all(output));
}

std::vector<std::vector<int32_t>> id_lists(const JsonValue& value) {
  std::vector<std::vector<int32_t>> lists;
  for (const JsonValue& list : value.items()) {
    lists.emplace_back();
    for (const JsonValue& id : list.items()) lists.back().push_back(int32_t(id.number()));
  }
  return lists;
}

}  // namespace cmpi::data::testing
