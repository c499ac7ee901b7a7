#include "io/checked_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "io/file_error.h"

namespace cmpi::io {

CheckedFile::CheckedFile(const std::string& path, Mode mode) : path_(path) {
  int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC;
  flags |= mode == Mode::kExclusive ? O_EXCL : O_TRUNC;
  do {
    fd_ = ::open(path.c_str(), flags, 0666);
  } while (fd_ < 0 && errno == EINTR);
  if (fd_ < 0) throw FileError("open for writing", path, errno);
}

CheckedFile::CheckedFile(CheckedFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)) {}

CheckedFile::~CheckedFile() {
  if (fd_ >= 0) ::close(fd_);
}

void CheckedFile::append(const void* data, size_t size) {
  if (fd_ < 0) throw FileError("write (already closed)", path_, EBADF);
  const char* next = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t written = ::write(fd_, next, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      throw FileError("write", path_, errno);
    }
    // write(2) returning 0 for a nonzero size means no progress is possible;
    // treat it as the full disk it almost always is rather than spin.
    if (written == 0) throw FileError("write", path_, ENOSPC);
    next += written;
    size -= size_t(written);
  }
}

void CheckedFile::sync() {
  if (fd_ < 0) throw FileError("fsync (already closed)", path_, EBADF);
  while (::fsync(fd_) != 0) {
    if (errno != EINTR) throw FileError("fsync", path_, errno);
  }
}

void CheckedFile::close() {
  if (fd_ < 0) return;
  sync();
  // The descriptor is released even when close(2) fails (Linux), and retrying
  // after EINTR could close a descriptor another thread just opened.
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0 && errno != EINTR) throw FileError("close", path_, errno);
}

}  // namespace cmpi::io
