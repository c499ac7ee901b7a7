// Buffered writes to a file descriptor where every failure (open, write,
// fsync, close, rename) throws std::runtime_error naming the path and
// strerror: a full disk while writing a dataset must stop the run, not leave
// a silently truncated file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cmpi::data {

class CheckedFileWriter {
 public:
  // Creates or truncates `path`.
  explicit CheckedFileWriter(const std::string& path);
  // Closes without reporting errors (call close() to see them).
  ~CheckedFileWriter();
  CheckedFileWriter(const CheckedFileWriter&) = delete;
  CheckedFileWriter& operator=(const CheckedFileWriter&) = delete;

  void write(const void* data, size_t bytes);
  // Bytes written so far, buffered ones included.
  uint64_t bytes_written() const { return written_; }
  // Flushes, fsyncs and closes; throws on any failure.
  void close();
  const std::string& path() const { return path_; }

 private:
  void flush();

  std::string path_;
  int fd_ = -1;
  std::vector<uint8_t> buffer_;
  uint64_t written_ = 0;
};

// rename(2) with the checked error of CheckedFileWriter.
void checked_rename(const std::string& from, const std::string& to);

}  // namespace cmpi::data
