// A 1 MiB buffer in front of write(2); write is retried on partial writes
// and EINTR, and any other failure is reported with the path.
#include "data/checked_file_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace cmpi::data {
namespace {

constexpr size_t kBufferBytes = size_t(1) << 20;

[[noreturn]] void fail(const std::string& what, const std::string& path) {
  throw std::runtime_error(path + ": cannot " + what + ": " + std::strerror(errno));
}

}  // namespace

CheckedFileWriter::CheckedFileWriter(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("create", path);
  buffer_.reserve(kBufferBytes);
}

CheckedFileWriter::~CheckedFileWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void CheckedFileWriter::write(const void* data, size_t bytes) {
  if (fd_ < 0) throw std::logic_error(path_ + ": write after close");
  const uint8_t* p = static_cast<const uint8_t*>(data);
  written_ += bytes;
  while (bytes > 0) {
    const size_t take = std::min(bytes, kBufferBytes - buffer_.size());
    buffer_.insert(buffer_.end(), p, p + take);
    p += take;
    bytes -= take;
    if (buffer_.size() == kBufferBytes) flush();
  }
}

void CheckedFileWriter::flush() {
  const uint8_t* p = buffer_.data();
  size_t left = buffer_.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write", path_);
    }
    p += n;
    left -= size_t(n);
  }
  buffer_.clear();
}

void CheckedFileWriter::close() {
  if (fd_ < 0) return;
  flush();
  if (::fsync(fd_) != 0 && errno != EINVAL) fail("fsync", path_);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("close", path_);
}

void checked_rename(const std::string& from, const std::string& to) {
  if (std::rename(from.c_str(), to.c_str()) != 0) {
    throw std::runtime_error("cannot rename " + from + " to " + to + ": " + std::strerror(errno));
  }
}

}  // namespace cmpi::data
