// write_file_atomically: replaces a whole file so that readers (and a crash at
// any moment) see either the old contents or the complete new ones, never a
// prefix. The data goes to a fresh temporary file in the same directory
// (rename(2) is atomic only within one file system), which is fsynced and then
// renamed over the target; finally the directory is fsynced so the rename
// itself survives a crash. Any failure removes the temporary file and throws
// io::FileError naming the path and the OS error; the target is then left as
// it was (absent, or its old contents).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace cmpi::io {

void write_file_atomically(const std::string& path, const void* data, size_t size);

inline void write_file_atomically(const std::string& path, std::string_view contents) {
  write_file_atomically(path, contents.data(), contents.size());
}

}  // namespace cmpi::io
