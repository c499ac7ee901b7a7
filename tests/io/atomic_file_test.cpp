// write_file_atomically: the target ends up with exactly the new contents, an
// old file is replaced whole, and a failure names the target, leaves it as it
// was and leaves no temporary file behind.
#include "io/atomic_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "io/file_error.h"
#include "tests/io/scratch_dir.h"

namespace cmpi::io {
namespace {

using testing::read_all;
using testing::ScratchDir;

size_t entries_in(const std::string& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

TEST(WriteFileAtomically, WritesAndReplacesWholeFiles) {
  ScratchDir dir;
  const std::string path = dir.file("summary.json");
  write_file_atomically(path, std::string(100000, 'a'));
  write_file_atomically(path, "{\"steps\":3}\n");
  EXPECT_EQ(read_all(path), "{\"steps\":3}\n");
  EXPECT_EQ(entries_in(dir.path()), 1u) << "a temporary file was left behind";
}

TEST(WriteFileAtomically, WritesBinaryData) {
  ScratchDir dir;
  const float values[3] = {1.5f, -2.0f, 0.0f};
  write_file_atomically(dir.file("g.f32"), values, sizeof values);
  EXPECT_EQ(read_all(dir.file("g.f32")), std::string(reinterpret_cast<const char*>(values), 12));
}

TEST(WriteFileAtomically, FailureNamesTheTargetAndKeepsTheOldContents) {
  ScratchDir dir;
  // Renaming a file over a non-empty directory fails (EISDIR/ENOTEMPTY)
  // after the data was written: the temporary must be removed.
  const std::string blocked = dir.file("blocked");
  std::filesystem::create_directories(blocked + "/inside");
  try {
    write_file_atomically(blocked, "data");
    ADD_FAILURE() << "no FileError thrown";
  } catch (const FileError& e) {
    EXPECT_EQ(e.path(), blocked);
    EXPECT_NE(std::string(e.what()).find(blocked), std::string::npos) << e.what();
  }
  EXPECT_TRUE(std::filesystem::is_directory(blocked + "/inside"));
  EXPECT_EQ(entries_in(dir.path()), 1u) << "a temporary file was left behind";
}

TEST(WriteFileAtomically, MissingDirectoryNamesTheTarget) {
  ScratchDir dir;
  const std::string path = dir.file("no-such-dir/config.yaml");
  try {
    write_file_atomically(path, "x");
    ADD_FAILURE() << "no FileError thrown";
  } catch (const FileError& e) {
    EXPECT_EQ(std::string(e.what()),
              "cannot open for writing " + path + ": No such file or directory");
  }
}

}  // namespace
}  // namespace cmpi::io
