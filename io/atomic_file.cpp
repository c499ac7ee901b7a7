#include "io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>

#include "io/checked_file.h"
#include "io/file_error.h"

namespace cmpi::io {
namespace {

std::string directory_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// A name no other writer uses: ".<name>.tmp.<pid>.<clock>" beside the target
// (hidden, and recognisable as debris should the process die mid-write).
std::string temporary_name_for(const std::string& path, int attempt) {
  const auto slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  const auto ticks = std::chrono::steady_clock::now().time_since_epoch().count();
  return dir + "." + name + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(ticks) +
         "." + std::to_string(attempt);
}

CheckedFile create_temporary_for(const std::string& path) {
  for (int attempt = 0;; ++attempt) {
    try {
      return CheckedFile(temporary_name_for(path, attempt), CheckedFile::Mode::kExclusive);
    } catch (const FileError& e) {
      if (e.os_error() != EEXIST || attempt >= 10) throw;
    }
  }
}

void sync_directory(const std::string& dir) {
  int fd;
  do {
    fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) throw FileError("open directory", dir, errno);
  int result;
  do {
    result = ::fsync(fd);
  } while (result != 0 && errno == EINTR);
  const int sync_error = errno;
  ::close(fd);
  // Some file systems cannot fsync a directory at all (EINVAL): there the
  // rename is as durable as that file system makes it, which is not an error.
  if (result != 0 && sync_error != EINVAL) throw FileError("fsync directory", dir, sync_error);
}

}  // namespace

void write_file_atomically(const std::string& path, const void* data, size_t size) {
  // Errors name the target, not the temporary: that is the file the user asked for.
  std::string temporary_path;
  try {
    CheckedFile temporary = create_temporary_for(path);
    temporary_path = temporary.path();
    temporary.append(data, size);
    temporary.close();
  } catch (const FileError& e) {
    if (!temporary_path.empty()) ::unlink(temporary_path.c_str());
    throw FileError(e.action(), path, e.os_error());
  }
  if (std::rename(temporary_path.c_str(), path.c_str()) != 0) {
    const int rename_error = errno;
    ::unlink(temporary_path.c_str());
    throw FileError("rename " + temporary_path + " to", path, rename_error);
  }
  sync_directory(directory_of(path));
}

}  // namespace cmpi::io
