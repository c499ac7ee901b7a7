// metadata.yaml: what to_yaml writes reads back field for field; a file that
// is missing, not a checkpoint's, or lacks a field is an error naming it.
#include "checkpoint/metadata.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <stdexcept>

#include "checkpoint/checksum.h"

namespace cmpi::checkpoint {
namespace {

std::string write_temp(const std::string& text) {
  const std::string path = ::testing::TempDir() + "metadata_test.yaml";
  std::ofstream(path) << text;
  return path;
}

TEST(Metadata, RoundTrips) {
  CheckpointMetadata m;
  m.step = 40;
  m.optimizer_steps = 38;
  m.skipped_steps = 2;
  m.layout = {{"dp", 2}, {"tp", 2}, {"pp", 1}, {"zero_stage", 3}, {"world", 4}};
  m.model = {{"hidden", 64}, {"layers", 2}};
  m.config = {"config.yaml", 900, 0x0123456789abcdefULL, {}};
  m.shards = {{"shard_00000.bin", 10, 0xffffffffffffffffULL, {"a.weight", "b.bias"}},
              {"shard_00001.bin", 16, 7, {}}};
  const auto r = read_metadata(write_temp(to_yaml(m)));
  EXPECT_EQ(r.step, 40);
  EXPECT_EQ(r.optimizer_steps, 38);
  EXPECT_EQ(r.skipped_steps, 2);
  EXPECT_EQ(r.layout, m.layout);
  EXPECT_EQ(r.model, m.model);
  EXPECT_EQ(r.config.fnv1a64, m.config.fnv1a64);
  ASSERT_EQ(r.shards.size(), 2u);
  EXPECT_EQ(r.shards[0].fnv1a64, 0xffffffffffffffffULL);
  EXPECT_EQ(r.shards[0].params, (std::vector<std::string>{"a.weight", "b.bias"}));
  EXPECT_EQ(r.shards[1].bytes, 16u);
}

TEST(Metadata, ErrorsNameTheFile) {
  const auto message = [](const std::string& path) {
    try {
      read_metadata(path);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("/nonexistent/metadata.yaml").find("/nonexistent/metadata.yaml"),
            std::string::npos);
  const std::string other = write_temp("format: something-else\n");
  EXPECT_NE(message(other).find(other), std::string::npos);
  const std::string no_shards =
      write_temp("format: cmpi-checkpoint\nversion: 1\nstep: 1\noptimizer_steps: 1\n");
  EXPECT_NE(message(no_shards).find("malformed"), std::string::npos);
}

// Found by bench/fuzz (checkpoint_metadata): a checksum that is not hex
// escaped as std::invalid_argument, without the file's name.
TEST(Metadata, AChecksumThatIsNotHexIsAnErrorNamingTheFileAndField) {
  const auto with_checksum = [](const std::string& checksum) {
    return "format: cmpi-checkpoint\nversion: 1\nstep: 1\noptimizer_steps: 1\n"
           "skipped_steps: 0\nlayout: {dp: 1}\nmodel: {}\n"
           "config: {file: config.yaml, bytes: 1, fnv1a64: \"0x1\"}\n"
           "shards:\n  - {file: shard.bin, bytes: 1, fnv1a64: \"" +
           checksum + "\"}\n";
  };
  EXPECT_EQ(parse_metadata(with_checksum("0xAf63dc4c8601ec8c"), "m.yaml").shards[0].fnv1a64,
            0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(parse_metadata(with_checksum("ff"), "m.yaml").shards[0].fnv1a64, 0xffULL);
  for (const std::string bad : {"xyz", "-1", "0x", "", "1 2", "0x10000000000000000"}) {
    try {
      parse_metadata(with_checksum(bad), "m.yaml");
      ADD_FAILURE() << "accepted fnv1a64 '" << bad << "'";
    } catch (const std::runtime_error& e) {
      const std::string message = e.what();
      EXPECT_EQ(message.rfind("m.yaml: malformed checkpoint metadata: fnv1a64 '" + bad + "'", 0),
                0u)
          << message;
    }
  }
}

TEST(Checksum, IsFnv1a64) {
  EXPECT_EQ(fnv1a64("", 0), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a64("a", 1), 0xaf63dc4c8601ec8cULL);  // published FNV-1a 64 test vector
  EXPECT_EQ(checksum_hex(0xaf63dc4c8601ec8cULL), "0xaf63dc4c8601ec8c");
}

}  // namespace
}  // namespace cmpi::checkpoint
