// MetricsLog's file: one JSON line per record, and a write that fails (here
// /dev/full, which refuses every write with ENOSPC) throws an error naming
// the file instead of being dropped.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "io/file_error.h"
#include "trainer/metrics.h"

namespace cmpi::trainer {
namespace {

StepRecord step(int64_t n) {
  StepRecord r;
  r.step = n;
  r.total_steps = 2;
  r.loss = 3.5;
  return r;
}

TEST(MetricsLog, WritesOneLinePerRecord) {
  const std::string path = ::testing::TempDir() + "metrics_log_test.jsonl";
  MetricsLog log(path, 0);
  log.record(step(1));
  log.record(step(2));
  log.close();
  std::ifstream in(path);
  std::string first, second, extra;
  ASSERT_TRUE(std::getline(in, first) && std::getline(in, second));
  EXPECT_FALSE(std::getline(in, extra));
  EXPECT_EQ(first, MetricsLog::to_json(step(1)));
  EXPECT_EQ(second, MetricsLog::to_json(step(2)));
  std::remove(path.c_str());
}

TEST(MetricsLog, AFullDiskThrowsNamingTheFile) {
  MetricsLog log("/dev/full", 0);
  try {
    log.record(step(1));
    FAIL() << "a record to a full disk was dropped silently";
  } catch (const io::FileError& e) {
    EXPECT_EQ(std::string(e.what()), "cannot write /dev/full: No space left on device");
  }
}

TEST(MetricsLog, WithoutAFileRecordAndCloseDoNothing) {
  MetricsLog log("", 0);
  log.record(step(1));
  log.close();
}

}  // namespace
}  // namespace cmpi::trainer
