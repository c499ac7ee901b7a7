// TensorBoard event files (io/tensorboard_writer.h): CRC-32C's published
// check value, TFRecord framing, and a file read back record by record into
// the Event messages it holds (file_version first, a restart marker, the
// scalars of each step). tests/trainer/tensorboard_test.sh reads a run's
// file with TensorBoard itself.
#include "io/tensorboard_writer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "io/crc32c.h"
#include "io/file_error.h"
#include "io/tensorboard_event.pb.h"
#include "tests/io/scratch_dir.h"

namespace cmpi::io {
namespace {

using testing::read_all;
using testing::ScratchDir;

uint64_t le64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | uint8_t(p[i]);
  return v;
}

uint32_t le32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | uint8_t(p[i]);
  return v;
}

// The records of a TFRecord file, their checksums verified.
std::vector<std::string> records_of(const std::string& bytes) {
  std::vector<std::string> records;
  size_t at = 0;
  while (at < bytes.size()) {
    EXPECT_GE(bytes.size() - at, 16u);
    const uint64_t length = le64(bytes.data() + at);
    EXPECT_EQ(le32(bytes.data() + at + 8), masked_crc32c(bytes.data() + at, 8));
    std::string data = bytes.substr(at + 12, length);
    EXPECT_EQ(le32(bytes.data() + at + 12 + length), masked_crc32c(data.data(), data.size()));
    records.push_back(data);
    at += 16 + length;
  }
  return records;
}

TEST(Crc32c, PublishedCheckValue) {
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(crc32c("", 0), 0u);
  // 32 zero bytes: RFC 3720's (iSCSI) first test vector.
  const std::string zeros(32, '\0');
  EXPECT_EQ(crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
}

TEST(TfRecord, FramesLengthDataAndTheirMaskedChecksums) {
  const std::string framed = tf_record("abc");
  ASSERT_EQ(framed.size(), 3u + 16u);
  EXPECT_EQ(le64(framed.data()), 3u);
  EXPECT_EQ(framed.substr(12, 3), "abc");
  const uint32_t crc = crc32c("abc", 3);
  EXPECT_EQ(le32(framed.data() + 15), ((crc >> 15) | (crc << 17)) + 0xA282EAD8u);
}

TEST(TensorBoardWriter, WritesVersionRestartAndScalarsAsEvents) {
  ScratchDir dir;
  TensorBoardWriter writer(dir.file("tb"));
  const std::string name = std::filesystem::path(writer.path()).filename().string();
  EXPECT_EQ(name.rfind("events.out.tfevents.", 0), 0u) << name;
  writer.restart_at(4);
  writer.add_scalars(4, {{"loss", 2.5}, {"groups/dp/ratio", 1.25}});
  // Handed to the kernel per step: readable before close.
  EXPECT_EQ(records_of(read_all(writer.path())).size(), 3u);
  writer.add_scalars(5, {{"loss", 2.25}});
  writer.close();

  const auto records = records_of(read_all(writer.path()));
  ASSERT_EQ(records.size(), 4u);
  std::vector<tensorboard::Event> events(records.size());
  for (size_t i = 0; i < records.size(); ++i) ASSERT_TRUE(events[i].ParseFromString(records[i]));
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_GT(events[0].wall_time(), 1.6e9);
  EXPECT_EQ(events[1].step(), 4);
  EXPECT_EQ(events[1].session_log().status(), tensorboard::SessionLog::START);
  ASSERT_EQ(events[2].summary().value_size(), 2);
  EXPECT_EQ(events[2].step(), 4);
  EXPECT_EQ(events[2].summary().value(1).tag(), "groups/dp/ratio");
  EXPECT_FLOAT_EQ(events[2].summary().value(1).simple_value(), 1.25f);
  EXPECT_EQ(events[3].step(), 5);
  EXPECT_FLOAT_EQ(events[3].summary().value(0).simple_value(), 2.25f);
}

TEST(TensorBoardWriter, AFolderThatCannotBeMadeIsNamed) {
  try {
    TensorBoardWriter writer("/dev/null/tb");
    FAIL() << "no error";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("/dev/null/tb"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cmpi::io
