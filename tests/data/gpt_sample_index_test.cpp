// GPTDataset-style sampling: the split by document ranges, the sample index
// checked against the naive definition (sample s of the unshuffled order is
// tokens [s x seq_len, s x seq_len + seq_len] of the document-index order's
// token stream), the shuffles, the blend's shares, and the cache file: built
// once, read back equal, a corrupted one rebuilt, other inputs another file.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <sstream>

#include "data/blended_sample_order.h"
#include "data/gpt_sample_index.h"
#include "data/gpt_sample_index_cache.h"
#include "data/indexed_dataset.h"
#include "data/indexed_dataset_builder.h"
#include "tests/data/data_test_util.h"
#include "tests/support/test_seed.h"

namespace cmpi::data {
namespace {

using testing::ScratchDir;

// A dataset of `documents` documents of 1-3 sequences of 0-40 random tokens.
std::string make_dataset(const ScratchDir& dir, uint64_t seed, int documents) {
  const std::string prefix = dir.path("corpus");
  std::mt19937_64 rng(seed);
  IndexedDatasetBuilder builder(prefix, TokenDtype::kUInt16);
  for (int d = 0; d < documents; ++d) {
    const int sequences = 1 + int(rng() % 3);
    for (int s = 0; s < sequences; ++s) {
      std::vector<int32_t> tokens(rng() % 41);
      for (auto& t : tokens) t = int32_t(rng() % 1000);
      builder.add_sequence(tokens.data(), tokens.size());
    }
    builder.end_document();
  }
  builder.finalize();
  return prefix;
}

TEST(GptSampleIndex, SplitsDocumentsIntoConsecutiveRangesByRatio) {
  const auto ranges = split_documents(100, {0.98, 0.02});
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[0].begin, 0u);
  EXPECT_EQ(ranges[0].end, 98u);
  EXPECT_EQ(ranges[1].begin, 98u);
  EXPECT_EQ(ranges[1].end, 100u);
  const auto thirds = split_documents(10, {1, 1, 1});
  EXPECT_EQ(thirds[0].end, 3u);
  EXPECT_EQ(thirds[1].end, 7u);
  EXPECT_EQ(thirds[2].end, 10u);
  EXPECT_EQ(split_documents(5, {1, 0})[1].size(), 0u);
  EXPECT_THROW(split_documents(5, {0, 0}), std::invalid_argument);
  EXPECT_THROW(split_documents(5, {1, -1}), std::invalid_argument);
}

TEST(GptSampleIndex, SamplesAreTheTokenStreamOfTheShuffledDocumentsOverlappingByOneToken) {
  const uint64_t seed = cmpi::testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  ScratchDir dir;
  const IndexedDataset dataset(make_dataset(dir, seed, 30));
  const auto documents = split_documents(dataset.documents(), {0.8, 0.2});
  for (const auto& split : documents) {
    const SequenceRange sequences = sequences_of_documents(dataset, split);
    const auto lengths = sequence_lengths(dataset, sequences);
    for (const int64_t seq_len : {1, 7, 64}) {
      const int64_t samples = 45;
      const auto index = build_gpt_sample_index(lengths, sequences, seq_len, samples, seed);
      EXPECT_EQ(check_gpt_sample_index(index, lengths, sequences, seq_len, samples), "");
      // Every epoch holds each sequence of the split once.
      const int64_t epochs = int64_t(index.document_index.size() / sequences.size());
      for (size_t s = sequences.begin; s < sequences.end; ++s)
        EXPECT_EQ(std::count(index.document_index.begin(), index.document_index.end(), int64_t(s)),
                  epochs);
      std::vector<int64_t> stream;
      for (int64_t id : index.document_index) {
        std::vector<int32_t> tokens;
        dataset.copy_sequence(size_t(id), tokens);
        stream.insert(stream.end(), tokens.begin(), tokens.end());
      }
      ASSERT_GE(int64_t(stream.size()), samples * seq_len + 1) << "enough epochs";
      std::vector<int64_t> sample(size_t(seq_len + 1));
      for (int64_t s = 0; s < samples; ++s) {
        copy_gpt_sample(dataset, index, size_t(s), sample.data(), sample.size());
        ASSERT_TRUE(std::equal(sample.begin(), sample.end(), stream.begin() + s * seq_len))
            << "sample " << s << " seq_len " << seq_len;
      }
      auto sorted = index.shuffle_index;
      std::sort(sorted.begin(), sorted.end());
      for (int64_t i = 0; i < samples; ++i) ASSERT_EQ(sorted[size_t(i)], i);
      EXPECT_NE(index.shuffle_index, sorted) << "45 samples left in order: no shuffle";

      const auto again = build_gpt_sample_index(lengths, sequences, seq_len, samples, seed);
      EXPECT_EQ(again.shuffle_index, index.shuffle_index) << "same seed, same index";
      EXPECT_EQ(again.document_index, index.document_index);
      EXPECT_NE(
          build_gpt_sample_index(lengths, sequences, seq_len, samples, seed + 1).shuffle_index,
          index.shuffle_index);
    }
  }
}

TEST(GptSampleIndex, CheckRejectsAnIndexThatDoesNotFitItsInputs) {
  const std::vector<int64_t> lengths = {5, 0, 9, 3};
  const SequenceRange sequences{10, 14};
  const auto index = build_gpt_sample_index(lengths, sequences, 4, 6, 7);
  ASSERT_EQ(check_gpt_sample_index(index, lengths, sequences, 4, 6), "");
  EXPECT_NE(check_gpt_sample_index(index, lengths, sequences, 5, 6), "");
  auto bad = index;
  bad.shuffle_index[0] = bad.shuffle_index[1];
  EXPECT_NE(check_gpt_sample_index(bad, lengths, sequences, 4, 6), "");
  bad = index;
  bad.document_index[0] = 3;
  EXPECT_NE(check_gpt_sample_index(bad, lengths, sequences, 4, 6), "");
  bad = index;
  bad.sample_index[3] += 1;
  EXPECT_NE(check_gpt_sample_index(bad, lengths, sequences, 4, 6), "");
  EXPECT_THROW(build_gpt_sample_index({0, 0}, {0, 2}, 4, 1, 1), std::invalid_argument);
}

TEST(BlendedSampleOrder, EveryPrefixFollowsTheWeightsWithinOneSample) {
  const auto order = blend_samples({3, 1, 6}, 1000);
  std::vector<int64_t> counts(3, 0);
  const double share[3] = {0.3, 0.1, 0.6};
  for (size_t i = 0; i < order.dataset.size(); ++i) {
    const int32_t d = order.dataset[i];
    ASSERT_EQ(order.dataset_sample[i], counts[size_t(d)]) << "each dataset's samples in order";
    ++counts[size_t(d)];
    for (int k = 0; k < 3; ++k)
      ASSERT_LE(std::abs(double(counts[size_t(k)]) - share[k] * double(i + 1)), 1.0)
          << "dataset " << k << " after " << i + 1 << " samples";
  }
  EXPECT_EQ(order.samples_per_dataset, counts);
  EXPECT_EQ(blend_samples({2}, 5).dataset, std::vector<int32_t>(5, 0));
  EXPECT_THROW(blend_samples({0, 0}, 5), std::invalid_argument);
}

TEST(GptSampleIndexCache, BuiltOnceThenReadBackAndRebuiltWhenCorrupted) {
  const uint64_t seed = cmpi::testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  ScratchDir dir;
  const std::string prefix = make_dataset(dir, seed, 20);
  const IndexedDataset dataset(prefix);
  GptSampleIndexSpec spec;
  spec.split_name = "train";
  spec.documents = split_documents(dataset.documents(), {0.9, 0.1})[0];
  spec.seq_len = 8;
  spec.num_samples = 30;
  spec.seed = seed;
  std::ostringstream log;
  const auto built = load_or_build_gpt_sample_index(dataset, prefix, "", spec, &log);
  EXPECT_FALSE(built.loaded);
  EXPECT_EQ(built.path.rfind(prefix + ".train.", 0), 0u) << built.path;
  const auto loaded = load_or_build_gpt_sample_index(dataset, prefix, "", spec, &log);
  EXPECT_TRUE(loaded.loaded);
  EXPECT_EQ(loaded.bytes, built.bytes);
  EXPECT_EQ(loaded.index.shuffle_index, built.index.shuffle_index);
  EXPECT_EQ(log.str(), "");

  // Any other input is another file.
  auto longer = spec;
  longer.seq_len = 9;
  EXPECT_NE(gpt_sample_index_cache_path(prefix, "", longer, gpt_sample_index_key(dataset, longer)),
            built.path);

  std::string bytes = testing::read_bytes(built.path);
  bytes[bytes.size() / 2] ^= 0x5a;
  testing::write_bytes(built.path, bytes);
  const auto rebuilt = load_or_build_gpt_sample_index(dataset, prefix, "", spec, &log);
  EXPECT_FALSE(rebuilt.loaded);
  EXPECT_NE(log.str().find("rebuilding the sample index cache: " + built.path), std::string::npos)
      << log.str();
  EXPECT_EQ(testing::read_bytes(built.path), std::string(built.bytes.begin(), built.bytes.end()));

  std::vector<uint8_t> truncated(built.bytes.begin(), built.bytes.end() - 9);
  const std::string key = gpt_sample_index_key(dataset, spec);
  EXPECT_THROW(parse_gpt_sample_index(truncated, key, dataset, spec, "x"), DatasetError);
  EXPECT_THROW(parse_gpt_sample_index(built.bytes, key + "!", dataset, spec, "x"), DatasetError);
}

}  // namespace
}  // namespace cmpi::data
