// Shard files: what is encoded decodes to the same entries, and every
// truncation or a wrong field is an error naming the file (never a crash or
// an out-of-bounds read).
#include "checkpoint/shard_file.h"

#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>

namespace cmpi::checkpoint {
namespace {

std::vector<ShardEntry> sample_entries() {
  ShardEntry a;
  a.name = "block0.attn.qkv.weight";
  a.slice = {{12, 4}, 0, 1, 2};  // rows 6..11 of a [12, 4] tensor
  a.offset = 5;
  a.values = {1.5f, -2.0f, 3.25f};
  a.exp_avg = {0.1f, 0.2f, 0.3f};
  a.exp_avg_sq = {1e-3f, 2e-3f, 3e-3f};
  ShardEntry b;
  b.name = "final_norm.bias";
  b.slice = {{4}, -1, 0, 1};
  b.values = {0, 1, 2, 3};
  b.exp_avg = {4, 5, 6, 7};
  b.exp_avg_sq = {8, 9, 10, 11};
  return {a, b};
}

TEST(ShardFile, RoundTrips) {
  const auto entries = sample_entries();
  const auto decoded = decode_shard(encode_shard(entries), "x.bin");
  ASSERT_EQ(decoded.size(), entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    EXPECT_EQ(decoded[i].name, entries[i].name);
    EXPECT_EQ(decoded[i].slice.global_shape, entries[i].slice.global_shape);
    EXPECT_EQ(decoded[i].slice.split_dim, entries[i].slice.split_dim);
    EXPECT_EQ(decoded[i].slice.index, entries[i].slice.index);
    EXPECT_EQ(decoded[i].slice.count, entries[i].slice.count);
    EXPECT_EQ(decoded[i].offset, entries[i].offset);
    EXPECT_EQ(decoded[i].values, entries[i].values);
    EXPECT_EQ(decoded[i].exp_avg, entries[i].exp_avg);
    EXPECT_EQ(decoded[i].exp_avg_sq, entries[i].exp_avg_sq);
  }
}

TEST(ShardFile, EveryTruncationIsAnErrorNamingTheFile) {
  const std::string bytes = encode_shard(sample_entries());
  for (size_t n = 0; n < bytes.size(); ++n) {
    try {
      decode_shard(bytes.substr(0, n), "cut.bin");
      ADD_FAILURE() << "a shard cut to " << n << " bytes decoded";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("cut.bin: ", 0), 0u) << e.what();
    }
  }
  EXPECT_THROW(decode_shard(bytes + "x", "long.bin"), std::runtime_error);
}

RankState sample_state() {
  return {{"comm/dp/residual/rule0:topk{ratio=0.1}/0000000000000001",
           std::string("\x01\x02\x03\x04", 4)},
          {"torch/default_generator", std::string(5056, '\x7f')},
          {"empty", ""}};
}

TEST(ShardFile, RankStateRoundTripsAfterTheEntries) {
  RankState state;
  const auto decoded =
      decode_shard(encode_shard(sample_entries(), sample_state()), "x.bin", &state);
  EXPECT_EQ(decoded.size(), 2u);
  EXPECT_EQ(state, sample_state());
}

TEST(ShardFile, EveryTruncationOfTheRankStateIsAnError) {
  const std::string bytes = encode_shard(sample_entries(), sample_state());
  const size_t entries_end = encode_shard(sample_entries()).size() - sizeof(uint32_t);
  for (size_t n = entries_end; n < bytes.size(); n += 7)
    EXPECT_THROW(decode_shard(bytes.substr(0, n), "cut.bin"), std::runtime_error) << n;
}

// Version 1 (before rank state): the same entries, no state section.
TEST(ShardFile, ReadsVersion1Files) {
  std::string bytes = encode_shard(sample_entries());
  bytes.resize(bytes.size() - sizeof(uint32_t));  // the empty state count
  const uint32_t version1 = 1;
  std::memcpy(&bytes[8], &version1, sizeof version1);
  RankState state{{"stale", "x"}};
  EXPECT_EQ(decode_shard(bytes, "v1.bin", &state).size(), 2u);
  EXPECT_TRUE(state.empty());
}

TEST(ShardFile, RefusesEntriesOutsideTheirSlice) {
  auto entries = sample_entries();
  entries[0].offset = 22;  // the slice has 24 elements; 3 from 22 run past it
  EXPECT_THROW(decode_shard(encode_shard(entries), "x.bin"), std::runtime_error);
  entries = sample_entries();
  entries[0].slice.count = 5;  // 12 rows do not split into 5
  EXPECT_THROW(decode_shard(encode_shard(entries), "x.bin"), std::runtime_error);
  std::string bytes = encode_shard(sample_entries());
  bytes[0] = 'X';
  EXPECT_THROW(decode_shard(bytes, "x.bin"), std::runtime_error);
}

// Found by bench/fuzz (checkpoint_shard): an entry's length field was
// allocated (three vectors of that many floats) before the reader checked
// that the file holds them, so 40 bytes could ask for terabytes.
TEST(ShardFile, ALengthPastTheFileIsRefusedBeforeAnyAllocation) {
  ShardEntry e;
  e.name = "w";
  e.slice = {{int64_t(1) << 20, int64_t(1) << 20}, -1, 0, 1};  // 2^40 elements
  e.values = e.exp_avg = e.exp_avg_sq = {1.0f};
  std::string bytes = encode_shard({e});
  // The length field: after magic, version, count, the name, the shape,
  // the slice's three int32 and the offset.
  const size_t length_at = 8 + 4 + 4 + (4 + 1) + (4 + 2 * 8) + 3 * 4 + 8;
  uint64_t length = 0;
  std::memcpy(&length, bytes.data() + length_at, 8);
  ASSERT_EQ(length, 1u);
  length = uint64_t(1) << 40;
  std::memcpy(bytes.data() + length_at, &length, 8);
  try {
    decode_shard(bytes, "huge.bin");
    ADD_FAILURE() << "accepted";
  } catch (const std::runtime_error& error) {
    EXPECT_EQ(std::string(error.what()),
              "huge.bin: truncated: entry w holds 1099511627776 elements (values and two "
              "moments), but only 16 bytes follow");
  }
}

// Found by bench/fuzz (checkpoint_shard, UBSan): an entry of no elements
// passed its empty vector's null data() to memcpy (undefined even for 0
// bytes; seen by the sanitizer builds of this suite, docs/hardening.md).
TEST(ShardFile, AnEntryOfNoElementsRoundTrips) {
  ShardEntry e;
  e.name = "empty_run";
  e.slice = {{4}, -1, 0, 1};
  e.offset = 4;
  const auto decoded = decode_shard(encode_shard({e, sample_entries()[1]}), "x.bin");
  ASSERT_EQ(decoded.size(), 2u);
  EXPECT_EQ(decoded[0].name, "empty_run");
  EXPECT_EQ(decoded[0].offset, 4u);
  EXPECT_TRUE(decoded[0].values.empty() && decoded[0].exp_avg.empty() &&
              decoded[0].exp_avg_sq.empty());
  EXPECT_EQ(decoded[1].values, sample_entries()[1].values);
}

// Found by bench/fuzz (checkpoint_shard, UBSan): a shape whose element
// count passes 2^63 overflowed int64_t in SliceSpec::global_numel.
TEST(ShardFile, AShapePast2To63ElementsIsRefusedNamingTheEntry) {
  ShardEntry e;
  e.name = "w";
  e.slice = {{int64_t(1) << 32, int64_t(1) << 32}, -1, 0, 1};
  e.values = e.exp_avg = e.exp_avg_sq = {1.0f};
  try {
    decode_shard(encode_shard({e}), "big.bin");
    ADD_FAILURE() << "accepted";
  } catch (const std::runtime_error& error) {
    EXPECT_EQ(std::string(error.what()), "big.bin: entry w: shape holds more than 2^63 elements");
  }
}

}  // namespace
}  // namespace cmpi::checkpoint
