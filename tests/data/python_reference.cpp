// Python runs by posix_spawn with an argument vector, never through a shell:
// texts travel in files, and no path needs quoting.
#include "tests/data/python_reference.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace cmpi::data::testing {
namespace {

const std::string kScriptDir = CMPI_REFERENCE_SCRIPT_DIR;

std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

// The build's interpreter (CMake's CMPI_PYTHON) first; where the build has
// none (a torch-free configuration) or it is gone, what
// scripts/python_env.sh would choose at run time. "" if none is executable.
std::string python_executable() {
  const std::string venv = env_or("CMPI_VENV", env_or("HOME", "/root") + "/.cache/cmpi-train/venv");
  for (const std::string& candidate :
       {std::string(CMPI_REFERENCE_PYTHON), env_or("CMPI_PYTHON", ""), venv + "/bin/python"}) {
    // A bare name is looked up on PATH by posix_spawnp; the import check
    // then tells whether it is usable.
    if (!candidate.empty() &&
        (candidate.find('/') == std::string::npos || ::access(candidate.c_str(), X_OK) == 0)) {
      return candidate;
    }
  }
  return "";
}

// Exit status of `argv` (-1 if it could not be started or was killed);
// `quiet` discards its output.
int run(const std::vector<std::string>& argv, bool quiet) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (quiet) {
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  }
  // What the child writes must come after what this process wrote so far.
  std::fflush(nullptr);
  pid_t pid = 0;
  const int error = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0) return -1;
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

std::string joined(const std::vector<std::string>& argv) {
  std::string s;
  for (const std::string& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

}  // namespace

std::string json_string(const std::string& s) {
  const auto escape = [](unsigned code_point) {
    char text[8];
    std::snprintf(text, sizeof text, "\\u%04x", code_point);
    return std::string(text);
  };
  std::string out = "\"";
  for (size_t i = 0; i < s.size(); ++i) {
    const uint8_t c = uint8_t(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20) {
      out += escape(c);
    } else if (c == 0xC2 && i + 1 < s.size() && uint8_t(s[i + 1]) >= 0x80 &&
               uint8_t(s[i + 1]) < 0xA0) {
      // C1 controls such as U+0085 print as nothing in a failure message.
      out += escape(uint8_t(s[++i]));
    } else if (s.compare(i, 3, "\xEF\xBB\xBF") == 0) {  // U+FEFF, invisible too
      out += escape(0xFEFF);
      i += 2;
    } else {
      out += char(c);
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

std::string gpt2_ranks_path() {
  return env_or("CMPI_REFERENCE_DIR", CMPI_REFERENCE_DEFAULT_DIR) + "/gpt2.tiktoken";
}

std::string check_python(const std::vector<std::string>& modules) {
  const std::string python = python_executable();
  if (python.empty()) {
    return "no Python environment (CMPI_PYTHON unset or not executable; scripts/setup.sh "
           "creates it)";
  }
  std::string names;
  for (const std::string& m : modules) names += (names.empty() ? "" : ", ") + m;
  if (run({python, "-c", "import " + names}, true) != 0) {
    return python + " cannot import " + names + " (scripts/setup.sh installs them)";
  }
  return "";
}

std::string prepare_gpt2_reference(const std::vector<std::string>& modules,
                                   const std::string& vocab_dir) {
  if (std::string skip = check_python(modules); !skip.empty()) return skip;
  const std::string python = python_executable();
  const std::string ranks = gpt2_ranks_path();
  if (!std::filesystem::exists(ranks)) {
    return "no GPT-2 BPE ranks at " + ranks + " (scripts/setup.sh fetches them from PyPI)";
  }
  const std::vector<std::string> derive{python, kScriptDir + "/gpt2_vocab_files.py", ranks,
                                        vocab_dir};
  if (run(derive, false) != 0) {
    throw std::runtime_error("could not derive GPT-2's vocabulary files: " + joined(derive));
  }
  return "";
}

JsonValue run_python(const std::string& work_dir, const std::string& script,
                     const std::vector<std::string>& texts, const std::vector<std::string>& args) {
  std::filesystem::create_directories(work_dir);
  const std::string input = work_dir + "/texts.json", output = work_dir + "/answer.json";
  {
    std::ofstream out(input, std::ios::binary);
    out << "[";
    for (size_t i = 0; i < texts.size(); ++i) out << (i ? "," : "") << json_string(texts[i]);
    out << "]";
  }
  std::filesystem::remove(output);
  std::vector<std::string> argv{python_executable(), kScriptDir + "/" + script, input, output};
  argv.insert(argv.end(), args.begin(), args.end());
  if (run(argv, false) != 0) throw std::runtime_error("python failed: " + joined(argv));
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
