#include "io/file_error.h"

#include <cstring>

namespace cmpi::io {

FileError::FileError(const std::string& action, const std::string& path, int os_error)
    : std::runtime_error("cannot " + action + " " + path + ": " + std::strerror(os_error)),
      action_(action),
      path_(path),
      os_error_(os_error) {}

}  // namespace cmpi::io
