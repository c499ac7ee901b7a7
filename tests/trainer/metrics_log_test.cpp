// MetricsLog's file: one JSON line per record, and a write that fails (here
// /dev/full, which refuses every write with ENOSPC) throws an error naming
// the file instead of being dropped. What a record says: the loss floor only
// where the data has one, non-finite losses as nan on the console, per-rank
// FLOP/s, MFU and ETA, and the TensorBoard scalars equal to the JSON's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
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

TEST(MetricsLog, LossFloorOnlyWhereTheDataHasOne) {
  StepRecord r = step(1);
  EXPECT_EQ(MetricsLog::to_json(r).find("loss_floor"), std::string::npos);
  EXPECT_EQ(MetricsLog::progress_line(r).find("floor"), std::string::npos);
  r.loss_floor = 1.25;
  EXPECT_NE(MetricsLog::to_json(r).find("\"loss_floor\":1.250000"), std::string::npos);
  EXPECT_NE(MetricsLog::progress_line(r).find("(floor 1.2500)"), std::string::npos);
}

TEST(MetricsLog, ANonFiniteLossReadsNanOnTheConsole) {
  StepRecord r = step(2);
  r.loss = -std::nan("");
  r.skipped = true;
  r.skipped_steps = 1;
  const std::string line = MetricsLog::progress_line(r);
  EXPECT_NE(line.find("| loss nan |"), std::string::npos) << line;
  EXPECT_EQ(line.find("-nan"), std::string::npos) << line;
  EXPECT_NE(line.find("SKIPPED: non-finite values, update not applied"), std::string::npos);
  r.loss = std::numeric_limits<double>::infinity();
  EXPECT_NE(MetricsLog::progress_line(r).find("| loss inf |"), std::string::npos);
}

TEST(MetricsLog, FlopsMfuAndEtaInTheLineAndTheRecord) {
  StepRecord r = step(1);
  r.total_steps = 100;
  r.tflops_per_rank = 0.0123;
  r.mfu = 0.214;
  r.hfu = 0.214;
  r.eta_seconds = 185;
  const std::string line = MetricsLog::progress_line(r);
  EXPECT_NE(line.find(" | 12.3 GFLOP/s/rank, MFU 21.4% | "), std::string::npos) << line;
  EXPECT_EQ(line.find("HFU"), std::string::npos) << line;
  EXPECT_NE(line.find(" | ETA 3m05s"), std::string::npos) << line;
  r.hfu = 0.25;  // recomputation makes the hardware do more
  EXPECT_NE(MetricsLog::progress_line(r).find("MFU 21.4% (HFU 25.0%)"), std::string::npos);
  const std::string json = MetricsLog::to_json(r);
  EXPECT_NE(json.find("\"tflops_per_rank\":0.0123,\"mfu\":0.214,\"hfu\":0.25,\"eta_s\":185.0"),
            std::string::npos)
      << json;
  // A model without a FLOP count (a ResNet) says nothing of it.
  const StepRecord plain = step(1);
  EXPECT_EQ(MetricsLog::to_json(plain).find("mfu"), std::string::npos);
  EXPECT_EQ(MetricsLog::progress_line(plain).find("FLOP/s"), std::string::npos);
}

TEST(MetricsLog, TensorBoardScalarsAreTheRecordsValues) {
  StepRecord r = step(3);
  r.lr = 1e-3;
  r.grad_norm = 0.5;
  r.tokens_per_second = 1000;
  r.has_val_loss = true;
  r.val_loss = 3.25;
  r.mfu = 0.5;
  r.hfu = 0.75;
  r.tflops_per_rank = 2;
  r.group_traffic = {{"dp", 2.5, 3000000}};
  std::map<std::string, double> tags;
  for (const auto& [tag, value] : MetricsLog::scalars(r)) tags[tag] = value;
  EXPECT_EQ(tags.at("loss"), 3.5);
  EXPECT_EQ(tags.at("val_loss"), 3.25);
  EXPECT_EQ(tags.at("lr"), 1e-3);
  EXPECT_EQ(tags.at("grad_norm"), 0.5);
  EXPECT_EQ(tags.at("tokens_per_s"), 1000);
  EXPECT_EQ(tags.at("mfu"), 0.5);
  EXPECT_EQ(tags.at("hfu"), 0.75);
  EXPECT_EQ(tags.at("tflops_per_rank"), 2);
  EXPECT_EQ(tags.at("groups/dp/ratio"), 2.5);
  EXPECT_EQ(tags.at("groups/dp/sent_MB"), 3);
  EXPECT_EQ(tags.count("loss_scale"), 0u);  // fp32: no loss scale
}

TEST(MetricsLog, ReadsNumbersBackFromARecord) {
  StepRecord r = step(7);
  r.loss = std::nan("");
  const std::string json = MetricsLog::to_json(r);
  EXPECT_EQ(number_field(json, "step"), 7);
  EXPECT_TRUE(std::isnan(*number_field(json, "loss")));
  EXPECT_FALSE(number_field(json, "val_loss").has_value());
}

}  // namespace
}  // namespace cmpi::trainer
