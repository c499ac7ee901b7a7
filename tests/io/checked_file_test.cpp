// CheckedFile and create_directories: data arrives whole, and every failure
// throws io::FileError whose message names the path and the OS error.
#include "io/checked_file.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "io/directories.h"
#include "io/file_error.h"
#include "tests/io/scratch_dir.h"

namespace cmpi::io {
namespace {

using testing::read_all;
using testing::ScratchDir;

// Runs `action`, requires a FileError, and returns its message.
template <typename Action>
std::string file_error_of(Action action, int* os_error = nullptr) {
  try {
    action();
  } catch (const FileError& e) {
    if (os_error) *os_error = e.os_error();
    return e.what();
  }
  ADD_FAILURE() << "no FileError thrown";
  return {};
}

TEST(CheckedFile, AppendsRecordsAndTruncatesAnOldFile) {
  ScratchDir dir;
  {
    CheckedFile old(dir.file("m.jsonl"), CheckedFile::Mode::kTruncate);
    old.append("stale contents that must disappear\n");
    old.close();
  }
  CheckedFile file(dir.file("m.jsonl"), CheckedFile::Mode::kTruncate);
  file.append("{\"step\":1}\n");
  file.append("{\"step\":2}\n");
  file.close();
  EXPECT_FALSE(file.is_open());
  EXPECT_EQ(read_all(dir.file("m.jsonl")), "{\"step\":1}\n{\"step\":2}\n");
}

TEST(CheckedFile, WritesLargeBuffersWhole) {
  ScratchDir dir;
  const std::string big(3 << 20, 'x');  // larger than one pipe/page-cache chunk
  CheckedFile file(dir.file("big"), CheckedFile::Mode::kTruncate);
  file.append(big);
  file.close();
  EXPECT_EQ(read_all(dir.file("big")), big);
}

TEST(CheckedFile, FullDiskNamesThePathAndNoSpaceLeft) {
  // /dev/full accepts the open and fails every write with ENOSPC.
  CheckedFile full("/dev/full", CheckedFile::Mode::kTruncate);
  int os_error = 0;
  const std::string message = file_error_of([&] { full.append("one record\n"); }, &os_error);
  EXPECT_EQ(os_error, ENOSPC);
  EXPECT_EQ(message, "cannot write /dev/full: No space left on device");
}

TEST(CheckedFile, OpenFailureNamesThePathAndTheReason) {
  ScratchDir dir;
  const std::string path = dir.file("missing-dir/metrics.jsonl");
  const std::string message =
      file_error_of([&] { CheckedFile(path, CheckedFile::Mode::kTruncate); });
  EXPECT_EQ(message, "cannot open for writing " + path + ": No such file or directory");
}

TEST(CheckedFile, ExclusiveRefusesAnExistingFile) {
  ScratchDir dir;
  CheckedFile(dir.file("a"), CheckedFile::Mode::kExclusive).close();
  int os_error = 0;
  file_error_of([&] { CheckedFile(dir.file("a"), CheckedFile::Mode::kExclusive); }, &os_error);
  EXPECT_EQ(os_error, EEXIST);
}

TEST(CheckedFile, WritingAfterCloseThrows) {
  ScratchDir dir;
  CheckedFile file(dir.file("a"), CheckedFile::Mode::kTruncate);
  file.close();
  file.close();  // closing twice is harmless
  EXPECT_NE(file_error_of([&] { file.append("late"); }).find(dir.file("a")), std::string::npos);
}

TEST(CreateDirectories, CreatesNestedDirectories) {
  ScratchDir dir;
  create_directories(dir.file("a/b/c"));
  CheckedFile(dir.file("a/b/c/f"), CheckedFile::Mode::kTruncate).close();
  create_directories(dir.file("a/b/c"));  // existing: fine
}

TEST(CreateDirectories, AFileInTheWayNamesThePath) {
  ScratchDir dir;
  CheckedFile(dir.file("not-a-dir"), CheckedFile::Mode::kTruncate).close();
  const std::string message = file_error_of([&] { create_directories(dir.file("not-a-dir/run")); });
  EXPECT_NE(message.find(dir.file("not-a-dir/run")), std::string::npos) << message;
  EXPECT_NE(message.find("Not a directory"), std::string::npos) << message;
  // The path itself being a file is refused too (mkdir -p would be happy).
  const std::string itself = file_error_of([&] { create_directories(dir.file("not-a-dir")); });
  EXPECT_NE(itself.find("Not a directory"), std::string::npos) << itself;
}

}  // namespace
}  // namespace cmpi::io
