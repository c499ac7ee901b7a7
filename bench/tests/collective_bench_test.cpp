// Unit tests of the collective benchmark's single-process parts: the option
// parser (sizes, link rates, codec lists, bad input named), the per-op
// bounds against closed-form values, the CSV line, and the buffers of each
// operation (block split, what reset restores). The MPI run itself is the
// bench_collective_quick smoke test.
#include <gtest/gtest.h>

#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/collective_bench_bounds.h"
#include "bench/collective_bench_ops.h"
#include "bench/collective_bench_options.h"
#include "bench/collective_bench_report.h"

namespace cmpi::bench {
namespace {

CollectiveBenchOptions parse(std::vector<std::string> args) {
  args.insert(args.begin(), "collective");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return parse_collective_bench_options(int(argv.size()), argv.data());
}

std::string error_of(std::vector<std::string> args) {
  try {
    parse(std::move(args));
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(CollectiveBenchOptions, ByteSizesUseBinaryUnits) {
  EXPECT_EQ(parse_byte_size("4096", "x"), 4096u);
  EXPECT_EQ(parse_byte_size("4KiB", "x"), 4096u);
  EXPECT_EQ(parse_byte_size("16MiB", "x"), 16u << 20);
  EXPECT_EQ(parse_byte_size("1M", "x"), 1u << 20);
  EXPECT_EQ(parse_byte_size("1GiB", "x"), size_t(1) << 30);
  EXPECT_THROW(parse_byte_size("4 parsecs", "--sizes"), std::invalid_argument);
  EXPECT_THROW(parse_byte_size("0.3B", "--sizes"), std::invalid_argument);
  EXPECT_EQ(format_byte_size(16u << 20), "16MiB");
  EXPECT_EQ(format_byte_size(4096), "4KiB");
  EXPECT_EQ(format_byte_size(1000), "1000B");
}

TEST(CollectiveBenchOptions, LinkRatesFollowTcUnits) {
  EXPECT_DOUBLE_EQ(parse_link_rate("200mbit"), 200e6);
  EXPECT_DOUBLE_EQ(parse_link_rate("1gbit"), 1e9);
  EXPECT_DOUBLE_EQ(parse_link_rate("500kbit"), 500e3);
  EXPECT_DOUBLE_EQ(parse_link_rate("25mbps"), 200e6);  // bytes per second
  EXPECT_THROW(parse_link_rate("fast"), std::invalid_argument);
  EXPECT_THROW(parse_link_rate("200mbits"), std::invalid_argument);
}

TEST(CollectiveBenchOptions, DefaultsCoverTheIssueLadder) {
  auto options = parse({});
  ASSERT_EQ(options.sizes.size(), 8u);  // 4KiB * 4^k, k = 0..7: up to 64MiB
  EXPECT_EQ(options.sizes.front(), 4096u);
  EXPECT_EQ(options.sizes.back(), size_t(64) << 20);
  EXPECT_EQ(options.ops.size(), 6u);
  EXPECT_FALSE(options.codecs_given);
  EXPECT_EQ(options.codec_min_bytes, 0);
}

TEST(CollectiveBenchOptions, LadderStepAndExplicitSizes) {
  auto ladder = parse({"--min-size", "1MiB", "--max-size", "8MiB", "--step", "2"});
  EXPECT_EQ(ladder.sizes, (std::vector<size_t>{1u << 20, 2u << 20, 4u << 20, 8u << 20}));
  auto list = parse({"--sizes", "16MiB,4KiB"});
  EXPECT_EQ(list.sizes, (std::vector<size_t>{16u << 20, 4096}));
}

TEST(CollectiveBenchOptions, CodecListsSplitOnSemicolonsNotCommas) {
  auto options = parse({"--codec", "mpc;zfp:mode=rate,rate=8", "--codec", "identity"});
  ASSERT_EQ(options.codecs.size(), 3u);
  EXPECT_EQ(options.codecs[0].name(), "mpc");
  EXPECT_EQ(options.codecs[1].name(), "zfp");
  EXPECT_EQ(options.codecs[1].get_string("rate", ""), "8");
  EXPECT_EQ(options.codecs[1].get_string("mode", ""), "rate");
  EXPECT_EQ(options.codecs[2].name(), "identity");
  EXPECT_TRUE(options.codecs_given);
  EXPECT_TRUE(parse({"--codec", "none"}).codecs.empty());
}

TEST(CollectiveBenchOptions, QuickIsSmallUnlessSizesAreGiven) {
  auto quick = parse({"--quick"});
  EXPECT_EQ(quick.sizes, (std::vector<size_t>{4096, 64u << 10, 1u << 20}));
  EXPECT_EQ(quick.iterations, 3);
  EXPECT_EQ(parse({"--quick", "--sizes", "16MiB"}).sizes, (std::vector<size_t>{16u << 20}));
}

TEST(CollectiveBenchOptions, MinBytesDefaultMeansThePolicyThreshold) {
  EXPECT_EQ(parse({"--min-bytes", "default"}).codec_min_bytes, -1);
  EXPECT_EQ(parse({"--min-bytes", "64KiB"}).codec_min_bytes, 64 << 10);
}

TEST(CollectiveBenchOptions, BadInputIsRefusedByName) {
  EXPECT_NE(error_of({"--ops", "allreduce,gossip"}).find("'gossip'"), std::string::npos);
  EXPECT_NE(error_of({"--ops", "halo"}).find("'halo'"), std::string::npos);
  EXPECT_NE(error_of({"--sizes", "6B"}).find("multiple of 4"), std::string::npos);
  EXPECT_NE(error_of({"--step", "3"}).find("--step"), std::string::npos);
  EXPECT_NE(error_of({"--iters", "0"}).find("--iters"), std::string::npos);
  EXPECT_NE(error_of({"--min-size", "1MiB", "--max-size", "4KiB"}).find("--max-size"),
            std::string::npos);
  EXPECT_NE(error_of({"--link-rate"}).find("missing value"), std::string::npos);
  EXPECT_NE(error_of({"--frobnicate"}).find("'--frobnicate'"), std::string::npos);
}

TEST(CollectiveBenchBounds, WireBoundMatchesTheRingVolumes) {
  const size_t mib16 = 16u << 20;
  const double link = 200e6;
  // Allreduce, 4 ranks, raw: 2*3/4 * 16 MiB * 8 bit / 200 Mbit/s.
  EXPECT_NEAR(wire_bound_seconds(comm::Op::kAllreduce, mib16, 4, 1, link), 1.5 * mib16 * 8 / link,
              1e-12);
  // Ratio 4 divides it by 4.
  EXPECT_NEAR(wire_bound_seconds(comm::Op::kAllreduce, mib16, 4, 4, link),
              1.5 * mib16 * 8 / link / 4, 1e-12);
  EXPECT_NEAR(wire_bound_seconds(comm::Op::kAllgather, mib16, 4, 2, link),
              0.75 * mib16 * 8 / link / 2, 1e-12);
  EXPECT_NEAR(wire_bound_seconds(comm::Op::kAlltoall, mib16, 8, 1, link),
              7.0 / 8 * mib16 * 8 / link, 1e-12);
  EXPECT_NEAR(wire_bound_seconds(comm::Op::kBroadcast, mib16, 4, 1, link), mib16 * 8 / link, 1e-12);
  EXPECT_EQ(wire_bound_seconds(comm::Op::kAllreduce, mib16, 1, 1, link), 0);
  EXPECT_EQ(wire_bound_seconds(comm::Op::kAllreduce, mib16, 4, 1, 0), 0);
}

TEST(CollectiveBenchBounds, CodecBoundCountsTheAlgorithmsWork) {
  // Allreduce on 4 ranks: one full encode and 2*3/4 decodes.
  EXPECT_DOUBLE_EQ(codec_bound_seconds(comm::Op::kAllreduce, 4, 1.0, 2.0), 1.0 + 1.5 * 2.0);
  EXPECT_DOUBLE_EQ(codec_bound_seconds(comm::Op::kAllgather, 4, 1.0, 2.0), 0.25 + 0.75 * 2.0);
  EXPECT_DOUBLE_EQ(codec_bound_seconds(comm::Op::kReduceScatter, 4, 1.0, 2.0), 0.75 * 3.0);
  EXPECT_DOUBLE_EQ(codec_bound_seconds(comm::Op::kSendRecv, 2, 1.0, 2.0), 2.0);
  EXPECT_EQ(codec_bound_seconds(comm::Op::kAllreduce, 1, 1.0, 2.0), 0);
}

TEST(CollectiveBenchReport, CsvLineHasOneFieldPerHeaderColumnAndQuotesSpecs) {
  CollectiveRow row;
  row.op = "allreduce";
  row.bytes = 16u << 20;
  row.ranks = 4;
  row.variant = "zfp:mode=rate,rate=8";
  row.median_seconds = 0.5;
  row.data = "gradients";
  const std::string line = collective_csv_line(row);
  EXPECT_NE(line.find("\"zfp:mode=rate,rate=8\""), std::string::npos);
  auto fields = [](const std::string& text) {
    size_t count = 1;
    bool quoted = false;
    for (char c : text) {
      if (c == '"') quoted = !quoted;
      if (c == ',' && !quoted) ++count;
    }
    return count;
  };
  EXPECT_EQ(fields(line), fields(collective_csv_header()));
  // algbw = 16 MiB / 0.5 s in MB/s.
  EXPECT_NE(line.find(",33.5544,"), std::string::npos) << line;
}

std::vector<float> ramp(size_t n) {
  std::vector<float> values(n);
  std::iota(values.begin(), values.end(), 1.0f);
  return values;
}

TEST(CollectiveOpBuffers, BlocksSplitTheMessageWithTheRemainderFirst) {
  const auto data = ramp(10);
  // 10 floats over 4 ranks: blocks 3, 3, 2, 2.
  CollectiveOpBuffers gather0(comm::Op::kAllgather, 40, 0, 4, data);
  CollectiveOpBuffers gather3(comm::Op::kAllgather, 40, 3, 4, data);
  EXPECT_EQ(gather0.input().size(), 3u);
  EXPECT_EQ(gather3.input().size(), 2u);
  EXPECT_EQ(gather3.result().size(), 10u);
  CollectiveOpBuffers scatter1(comm::Op::kReduceScatter, 40, 1, 4, data);
  EXPECT_EQ(scatter1.input().size(), 10u);
  EXPECT_EQ(scatter1.result().size(), 3u);
  // Alltoall: rank 2 receives its block size (2) from each of 4 ranks.
  CollectiveOpBuffers alltoall2(comm::Op::kAlltoall, 40, 2, 4, data);
  EXPECT_EQ(alltoall2.input().size(), 10u);
  EXPECT_EQ(alltoall2.result().size(), 8u);
}

TEST(CollectiveOpBuffers, ResetGivesEveryCallTheSameInput) {
  const auto data = ramp(8);
  CollectiveOpBuffers allreduce(comm::Op::kAllreduce, 32, 1, 2, data);
  EXPECT_EQ(allreduce.result(), data);
  // The broadcast receiver starts from zeros, so its result can only come from the root.
  CollectiveOpBuffers receiver(comm::Op::kBroadcast, 32, 1, 2, data);
  EXPECT_EQ(receiver.result(), std::vector<float>(8, 0.0f));
  CollectiveOpBuffers root(comm::Op::kBroadcast, 32, 0, 2, data);
  EXPECT_TRUE(root.result().empty());  // nothing to compare on the root
  CollectiveOpBuffers sender(comm::Op::kSendRecv, 32, 0, 3, data);
  CollectiveOpBuffers bystander(comm::Op::kSendRecv, 32, 2, 3, data);
  EXPECT_TRUE(sender.result().empty());
  EXPECT_TRUE(bystander.result().empty());
}

TEST(CollectiveOpBuffers, RefusesWhatCannotBeMeasured) {
  const auto data = ramp(8);
  EXPECT_THROW(CollectiveOpBuffers(comm::Op::kSendRecv, 32, 0, 1, data), std::invalid_argument);
  EXPECT_THROW(CollectiveOpBuffers(comm::Op::kAllreduce, 30, 0, 2, data), std::invalid_argument);
  EXPECT_THROW(CollectiveOpBuffers(comm::Op::kAllreduce, 64, 0, 2, data), std::invalid_argument);
}

}  // namespace
}  // namespace cmpi::bench
