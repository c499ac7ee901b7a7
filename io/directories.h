// create_directories: mkdir -p with the io/ error convention. Throws
// io::FileError naming the directory that could not be created (the first
// missing one, or a file standing in its way) and the OS error.
#pragma once

#include <string>

namespace cmpi::io {

void create_directories(const std::string& path);

}  // namespace cmpi::io
