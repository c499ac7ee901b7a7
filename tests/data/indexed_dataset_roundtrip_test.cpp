// Builder -> reader round trips for both token dtypes on random documents
// (fresh seed per run, printed), plus the builder's own guarantees: range
// checks, temporary names, no files left behind by an abandoned build.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "data/indexed_dataset.h"
#include "data/indexed_dataset_builder.h"
#include "tests/data/data_test_util.h"
#include "tests/support/test_seed.h"

namespace cmpi::data {
namespace {

using testing::ScratchDir;

// Documents of 1-3 sequences of 0-300 tokens each, tokens below max_token.
std::vector<std::vector<std::vector<int32_t>>> random_documents(std::mt19937_64& rng,
                                                                int32_t max_token) {
  std::vector<std::vector<std::vector<int32_t>>> documents(1 + rng() % 40);
  std::uniform_int_distribution<int32_t> token(0, max_token);
  for (auto& document : documents) {
    document.resize(1 + rng() % 3);
    for (auto& sequence : document) {
      sequence.resize(rng() % 301);
      for (int32_t& t : sequence) t = token(rng);
    }
  }
  return documents;
}

void round_trip(TokenDtype dtype, int32_t max_token) {
  const uint64_t seed = cmpi::testing::test_seed();
  SCOPED_TRACE("CMPI_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  ScratchDir dir;
  const std::string prefix = dir.path("set");
  const auto documents = random_documents(rng, max_token);
  {
    IndexedDatasetBuilder builder(prefix, dtype);
    for (const auto& document : documents) {
      for (const auto& sequence : document) builder.add_sequence(sequence.data(), sequence.size());
      builder.end_document();
    }
    builder.finalize();
  }
  EXPECT_FALSE(std::filesystem::exists(prefix + ".bin.tmp"));
  EXPECT_FALSE(std::filesystem::exists(prefix + ".idx.tmp"));

  const IndexedDataset dataset(prefix);
  ASSERT_EQ(dataset.dtype(), dtype);
  ASSERT_EQ(dataset.documents(), documents.size());
  size_t sequence = 0;
  uint64_t tokens = 0;
  std::vector<int32_t> copied;
  for (size_t d = 0; d < documents.size(); ++d) {
    ASSERT_EQ(dataset.document_begin(d), sequence);
    ASSERT_EQ(dataset.document_end(d), sequence + documents[d].size());
    for (const auto& expected : documents[d]) {
      ASSERT_EQ(dataset.sequence_length(sequence), expected.size());
      dataset.copy_sequence(sequence, copied);
      ASSERT_EQ(copied, expected) << "sequence " << sequence;
      if (dtype == TokenDtype::kUInt16) {
        const TokenSpan<uint16_t> span = dataset.sequence<uint16_t>(sequence);
        ASSERT_EQ(std::vector<int32_t>(span.begin(), span.end()), expected);
      } else {
        const TokenSpan<int32_t> span = dataset.sequence<int32_t>(sequence);
        ASSERT_EQ(std::vector<int32_t>(span.begin(), span.end()), expected);
      }
      tokens += expected.size();
      ++sequence;
    }
  }
  EXPECT_EQ(dataset.sequences(), sequence);
  EXPECT_EQ(dataset.total_tokens(), tokens);
  EXPECT_NO_THROW(dataset.validate_tokens(uint64_t(max_token) + 1));
  EXPECT_THROW(dataset.sequence_length(sequence), std::out_of_range);
  EXPECT_THROW(dataset.document_begin(documents.size()), std::out_of_range);
}

TEST(IndexedDatasetRoundTrip, UInt16) {
  round_trip(TokenDtype::kUInt16, 65535);
}

TEST(IndexedDatasetRoundTrip, Int32) {
  round_trip(TokenDtype::kInt32, 2147483647);
}

TEST(IndexedDatasetRoundTrip, EmptyDatasetHasOneDocumentIndexEntry) {
  ScratchDir dir;
  IndexedDatasetBuilder builder(dir.path("empty"), TokenDtype::kUInt16);
  builder.finalize();
  const IndexedDataset dataset(dir.path("empty"));
  EXPECT_EQ(dataset.sequences(), 0u);
  EXPECT_EQ(dataset.documents(), 0u);
  EXPECT_EQ(testing::read_bytes(dir.path("empty.idx")).size(), kIndexHeaderBytes + 8);
}

TEST(IndexedDatasetRoundTrip, WrongSpanTypeIsRefused) {
  ScratchDir dir;
  IndexedDatasetBuilder builder(dir.path("s"), TokenDtype::kInt32);
  builder.add_document({1, 2, 3});
  builder.finalize();
  const IndexedDataset dataset(dir.path("s"));
  EXPECT_THROW(dataset.sequence<uint16_t>(0), std::logic_error);
}

TEST(IndexedDatasetBuilder, RejectsTokensTheDtypeCannotHold) {
  ScratchDir dir;
  IndexedDatasetBuilder builder(dir.path("s"), TokenDtype::kUInt16);
  EXPECT_THROW(builder.add_document({1, 65536}), std::out_of_range);
  EXPECT_THROW(builder.add_document({-1}), std::out_of_range);
  IndexedDatasetBuilder wide(dir.path("w"), TokenDtype::kInt32);
  EXPECT_THROW(wide.add_document({-5}), std::out_of_range);
}

TEST(IndexedDatasetBuilder, AbandonedBuildLeavesNoFiles) {
  ScratchDir dir;
  {
    IndexedDatasetBuilder builder(dir.path("s"), TokenDtype::kUInt16);
    builder.add_document({1, 2, 3});
    EXPECT_TRUE(std::filesystem::exists(dir.path("s.bin.tmp")));
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path("s.bin.tmp")));
  EXPECT_FALSE(std::filesystem::exists(dir.path("s.bin")));
  EXPECT_FALSE(std::filesystem::exists(dir.path("s.idx")));
}

TEST(IndexedDatasetBuilder, UnwritableDirectoryNamesThePathAndReason) {
  try {
    IndexedDatasetBuilder builder("/nonexistent-dir-cmpi/set", TokenDtype::kUInt16);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir-cmpi/set.bin.tmp"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos)
        << e.what();
  }
}

TEST(IndexedDatasetBuilder, FullDiskIsAnErrorNamingThePath) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  CheckedFileWriter writer("/dev/full");
  const std::vector<uint8_t> block(1 << 20);
  try {
    writer.write(block.data(), block.size());
    writer.write(block.data(), block.size());
    writer.close();
    FAIL() << "writing to /dev/full succeeded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/dev/full"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("No space left on device"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cmpi::data
