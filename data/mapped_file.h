// A read-only memory mapping of a whole file: the kernel pages bytes in as
// they are touched, so opening a 100 GB dataset costs nothing up front. An
// empty file is a valid mapping of zero bytes (mmap itself refuses length 0).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace cmpi::data {

class MappedFile {
 public:
  // Throws std::runtime_error naming `path` and strerror on failure.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  void release();

  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace cmpi::data
