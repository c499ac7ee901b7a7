// Index coding of the sparsifiers: every form round-trips, the encoder picks
// the smallest form for the density it sees, and corrupted index streams are
// refused with DecodeError.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

#include "compress/payload.h"
#include "compress/sparse_indices.h"
#include "tests/support/test_seed.h"

namespace cmpi::compress {
namespace {

constexpr IndexForm kForms[] = {IndexForm::kAll, IndexForm::kBitmap, IndexForm::kDeltaFixed,
                                IndexForm::kDeltaVarint};

std::vector<uint64_t> random_positions(size_t k, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::set<uint64_t> chosen;
  while (chosen.size() < k) chosen.insert(rng() % n);
  return {chosen.begin(), chosen.end()};
}

std::vector<uint8_t> write(IndexForm form, const std::vector<uint64_t>& idx, size_t n) {
  std::vector<uint8_t> bytes(index_form_bytes(form, idx.data(), idx.size(), n));
  EXPECT_EQ(write_indices(form, idx.data(), idx.size(), n, bytes.data()), bytes.size());
  return bytes;
}

std::vector<uint64_t> read(IndexForm form, const std::vector<uint8_t>& bytes, size_t k, size_t n) {
  std::vector<uint64_t> idx(k);
  read_indices(form, bytes.data(), bytes.size(), k, n, idx.data());
  return idx;
}

std::string read_error(IndexForm form, const std::vector<uint8_t>& bytes, size_t k, size_t n) {
  std::vector<uint64_t> idx(k);
  try {
    read_indices(form, bytes.data(), bytes.size(), k, n, idx.data());
  } catch (const DecodeError& e) {
    return e.what();
  }
  return "";
}

TEST(SparseIndices, EveryApplicableFormRoundTrips) {
  const uint64_t seed = cmpi::testing::test_seed();
  for (size_t n : {1, 9, 64, 1000, 100003}) {
    for (double density : {0.0, 0.001, 0.01, 0.2, 0.7, 1.0}) {
      const size_t k = std::min(n, size_t(density * n));
      auto idx = random_positions(k, n, seed + n + k);
      for (IndexForm form : kForms) {
        if (index_form_bytes(form, idx.data(), k, n) == kIndexFormUnavailable) continue;
        EXPECT_EQ(read(form, write(form, idx, n), k, n), idx)
            << index_form_name(form) << " n=" << n << " k=" << k;
      }
    }
  }
}

TEST(SparseIndices, SmallestFormIsChosen) {
  const uint64_t seed = cmpi::testing::test_seed();
  for (size_t n : {100, 4096, 100003}) {
    for (double density : {0.0, 0.001, 0.01, 0.05, 0.1, 0.3, 0.9, 1.0}) {
      const size_t k = std::min(n, size_t(density * n));
      auto idx = random_positions(k, n, seed + 31 * n + k);
      const IndexForm chosen = smallest_index_form(idx.data(), k, n);
      const size_t chosen_bytes = index_form_bytes(chosen, idx.data(), k, n);
      for (IndexForm form : kForms)
        EXPECT_LE(chosen_bytes, index_form_bytes(form, idx.data(), k, n))
            << "chose " << index_form_name(chosen) << " over " << index_form_name(form)
            << " n=" << n << " k=" << k;
    }
  }
}

TEST(SparseIndices, FormFollowsDensity) {
  const size_t n = 100000;
  const uint64_t seed = cmpi::testing::test_seed();
  auto dense = random_positions(n / 3, n, seed);
  EXPECT_EQ(smallest_index_form(dense.data(), dense.size(), n), IndexForm::kBitmap);
  auto sparse = random_positions(n / 1000, n, seed + 1);
  const IndexForm sparse_form = smallest_index_form(sparse.data(), sparse.size(), n);
  EXPECT_TRUE(sparse_form == IndexForm::kDeltaFixed || sparse_form == IndexForm::kDeltaVarint);
  // Small gaps and one huge gap: a fixed width would be 17 bits for all.
  std::vector<uint64_t> clustered;
  for (uint64_t i = 0; i < 200; ++i) clustered.push_back(i * 3);
  for (uint64_t i = 0; i < 200; ++i) clustered.push_back(99000 + i * 3);
  EXPECT_EQ(smallest_index_form(clustered.data(), clustered.size(), n), IndexForm::kDeltaVarint);
  std::vector<uint64_t> run(500);
  for (size_t i = 0; i < run.size(); ++i) run[i] = 7000 + i;  // gaps 7000, then 0s
  EXPECT_EQ(smallest_index_form(run.data(), run.size(), n), IndexForm::kDeltaVarint);
  std::vector<uint64_t> all(64);
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  EXPECT_EQ(smallest_index_form(all.data(), all.size(), 64), IndexForm::kAll);
  EXPECT_EQ(index_form_bytes(IndexForm::kAll, all.data(), 64, 64), 0u);
}

TEST(SparseIndices, FormSizesAreAsDocumented) {
  const std::vector<uint64_t> idx = {0, 5, 6, 300};  // gaps 0, 4, 0, 293
  EXPECT_EQ(index_form_bytes(IndexForm::kBitmap, idx.data(), 4, 1001), 126u);
  EXPECT_EQ(index_form_bytes(IndexForm::kDeltaFixed, idx.data(), 4, 1001), 1u + 5u);  // 9 bits
  EXPECT_EQ(index_form_bytes(IndexForm::kDeltaVarint, idx.data(), 4, 1001), 5u);
  EXPECT_EQ(index_form_bytes(IndexForm::kAll, idx.data(), 4, 1001), kIndexFormUnavailable);
}

TEST(SparseIndices, WriterRefusesUnsortedOrOutOfRange) {
  std::vector<uint8_t> out(64);
  const std::vector<uint64_t> unsorted = {3, 2};
  EXPECT_THROW(write_indices(IndexForm::kBitmap, unsorted.data(), 2, 10, out.data()),
               std::invalid_argument);
  const std::vector<uint64_t> too_big = {3, 10};
  EXPECT_THROW(write_indices(IndexForm::kDeltaVarint, too_big.data(), 2, 10, out.data()),
               std::invalid_argument);
  EXPECT_THROW(write_indices(IndexForm::kAll, too_big.data(), 1, 10, out.data()),
               std::invalid_argument);
}

TEST(SparseIndicesFuzz, CorruptedStreamsAreRefused) {
  const size_t n = 1000;
  const std::vector<uint64_t> idx = {1, 17, 500, 999};

  auto bitmap = write(IndexForm::kBitmap, idx, n);
  EXPECT_NE(read_error(IndexForm::kBitmap, bitmap, 3, n).find("more than"), std::string::npos);
  EXPECT_NE(read_error(IndexForm::kBitmap, bitmap, 5, n).find("4 bits set"), std::string::npos);
  auto short_bitmap = bitmap;
  short_bitmap.pop_back();
  EXPECT_NE(read_error(IndexForm::kBitmap, short_bitmap, 4, n), "");
  auto stray = write(IndexForm::kBitmap, idx, 1003);
  stray.back() |= 0x80;  // bit 1007 > n
  EXPECT_NE(read_error(IndexForm::kBitmap, stray, 5, 1003).find("past n"), std::string::npos);

  auto varint = write(IndexForm::kDeltaVarint, idx, n);
  EXPECT_NE(read_error(IndexForm::kDeltaVarint, varint, 4, 999).find("runs past"),
            std::string::npos);
  EXPECT_NE(read_error(IndexForm::kDeltaVarint, varint, 5, n).find("ends inside"),
            std::string::npos);
  EXPECT_NE(read_error(IndexForm::kDeltaVarint, varint, 3, n).find("left after"),
            std::string::npos);
  const std::vector<uint8_t> endless(11, 0xff);
  EXPECT_NE(read_error(IndexForm::kDeltaVarint, endless, 1, n).find("overflows"),
            std::string::npos);

  auto fixed = write(IndexForm::kDeltaFixed, idx, n);
  EXPECT_NE(read_error(IndexForm::kDeltaFixed, fixed, 4, 999).find("runs past"), std::string::npos);
  auto wide = fixed;
  wide[0] = 33;
  EXPECT_NE(read_error(IndexForm::kDeltaFixed, wide, 4, n).find("width"), std::string::npos);
  EXPECT_NE(read_error(IndexForm::kDeltaFixed, fixed, 3, n), "");
  EXPECT_NE(read_error(IndexForm::kDeltaFixed, {}, 0, n).find("width byte"), std::string::npos);

  EXPECT_NE(read_error(IndexForm::kAll, {}, 999, n), "");
  EXPECT_NE(read_error(IndexForm::kBitmap, bitmap, n + 1, n).find("exceed"), std::string::npos);
  EXPECT_NE(read_error(IndexForm(7), bitmap, 4, n).find("unknown"), std::string::npos);
}

TEST(SparseIndicesFuzz, RandomBytesNeverEscapeDecodeError) {
  std::mt19937_64 rng(cmpi::testing::test_seed());
  for (int round = 0; round < 4000; ++round) {
    const size_t n = 1 + rng() % 300;
    const size_t k = rng() % (n + 1);
    std::vector<uint8_t> bytes(rng() % 64);
    for (auto& b : bytes) b = uint8_t(rng());
    const IndexForm form = IndexForm(rng() % 5);
    std::vector<uint64_t> idx(k);
    try {
      read_indices(form, bytes.data(), bytes.size(), k, n, idx.data());
      for (size_t j = 0; j < k; ++j) {
        ASSERT_LT(idx[j], n);
        if (j) ASSERT_LT(idx[j - 1], idx[j]);
      }
    } catch (const DecodeError&) {
    }
  }
}

}  // namespace
}  // namespace cmpi::compress
