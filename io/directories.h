// create_directories: mkdir -p with the io/ error convention. Throws
// io::FileError naming the requested directory and the OS error (e.g. "Not a
// directory" when a file stands somewhere on the path).
#pragma once

#include <string>

namespace cmpi::io {

void create_directories(const std::string& path);

}  // namespace cmpi::io
