// FileError: the one exception io/ throws. Its message names the operation,
// the path and the OS error, e.g. "cannot write runs/tiny/metrics.jsonl: No
// space left on device", so that whoever prints it (main's abort_job) tells
// the user which file failed and why without any further context.
#pragma once

#include <stdexcept>
#include <string>

namespace cmpi::io {

class FileError : public std::runtime_error {
 public:
  // action: what failed, e.g. "write", "fsync", "open for writing".
  // os_error: the errno value it failed with.
  FileError(const std::string& action, const std::string& path, int os_error);

  const std::string& action() const { return action_; }
  const std::string& path() const { return path_; }
  int os_error() const { return os_error_; }

 private:
  std::string action_;
  std::string path_;
  int os_error_;
};

}  // namespace cmpi::io
