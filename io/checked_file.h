// CheckedFile: a file opened for writing through a raw descriptor, where every
// write(2), fsync(2) and close(2) is checked. A short write is continued until
// the whole buffer is out (or the OS returns an error); interrupted calls
// (EINTR) are retried; any failure throws io::FileError naming the path and
// the OS error. Buffering is the caller's choice: each append() is one
// record, handed to the kernel before append() returns, so a crash loses at
// most the record being written.
//
// close() is the only way to learn whether the data made it: it fsyncs (file
// systems such as NFS report a full disk only there) and closes, and throws on
// either failing. The destructor closes a file that was not closed explicitly
// without reporting errors, because it runs while another error unwinds the
// stack and that error is the one to report.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace cmpi::io {

class CheckedFile {
 public:
  enum class Mode {
    kTruncate,   // create, or empty an existing file
    kExclusive,  // create; fail (EEXIST) if the path exists
  };

  CheckedFile(const std::string& path, Mode mode);
  ~CheckedFile();
  CheckedFile(CheckedFile&& other) noexcept;
  CheckedFile& operator=(CheckedFile&& other) = delete;
  CheckedFile(const CheckedFile&) = delete;
  CheckedFile& operator=(const CheckedFile&) = delete;

  // Writes all of [data, data + size) at the end of the file.
  void append(const void* data, size_t size);
  void append(std::string_view text) { append(text.data(), text.size()); }
  // Forces what was written to storage.
  void sync();
  // sync() then close(2). After close() the object holds no file.
  void close();

  bool is_open() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace cmpi::io
