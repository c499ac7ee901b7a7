#include "io/directories.h"

#include <cerrno>
#include <filesystem>
#include <system_error>

#include "io/file_error.h"

namespace cmpi::io {

void create_directories(const std::string& path) {
  std::error_code error;
  std::filesystem::create_directories(path, error);
  if (error) throw FileError("create directory", path, error.value());
  // create_directories reports success when the path exists, whatever it is.
  if (!std::filesystem::is_directory(path, error))
    throw FileError("create directory", path, error ? error.value() : ENOTDIR);
}

}  // namespace cmpi::io
