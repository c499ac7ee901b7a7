// One test per class of malformed dataset: a valid dataset is written, then
// one field of its .idx (or the .bin length) is corrupted in place, and
// opening must fail with a DatasetError whose message names the file and the
// field. The valid dataset (uint16, 4 sequences of 3, 2, 4, 1 tokens in 3
// documents) puts the .idx fields at fixed offsets:
//   sizes 34..49, pointers 50..81, document index 82..113 (4 entries).
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "data/indexed_dataset.h"
#include "data/indexed_dataset_builder.h"
#include "tests/data/data_test_util.h"
#include "tests/support/test_seed.h"

namespace cmpi::data {
namespace {

using testing::read_bytes;
using testing::write_bytes;

constexpr size_t kSizes = 34, kPointers = 50, kDocuments = 82;

class MalformedDataset : public ::testing::Test {
 protected:
  void SetUp() override {
    prefix_ = dir_.path("set");
    IndexedDatasetBuilder builder(prefix_, TokenDtype::kUInt16);
    const std::vector<int32_t> a{1, 2, 3}, b{4, 5}, c{6, 7, 8, 9}, d{10};
    builder.add_sequence(a.data(), a.size());
    builder.add_sequence(b.data(), b.size());
    builder.end_document();
    builder.add_document(c);
    builder.add_document(d);
    builder.finalize();
    idx_ = read_bytes(idx_path());
    ASSERT_EQ(idx_.size(), 114u);
  }

  std::string idx_path() const { return prefix_ + ".idx"; }
  std::string bin_path() const { return prefix_ + ".bin"; }

  template <typename T>
  void patch(size_t offset, T value) {
    std::memcpy(&idx_[offset], &value, sizeof value);
    write_bytes(idx_path(), idx_);
  }

  // Opening must fail naming `path` and `field`, with `detail` in the message.
  void expect_error(const std::string& path, const std::string& field, const std::string& detail) {
    try {
      IndexedDataset dataset(prefix_);
      FAIL() << "opened a malformed dataset (expected an error on " << field << ")";
    } catch (const DatasetError& e) {
      const std::string message = e.what();
      EXPECT_EQ(e.path(), path);
      EXPECT_EQ(e.field(), field) << message;
      EXPECT_NE(message.find(path), std::string::npos) << message;
      EXPECT_NE(message.find(field), std::string::npos) << message;
      EXPECT_NE(message.find(detail), std::string::npos) << message;
    }
  }

  testing::ScratchDir dir_;
  std::string prefix_;
  std::string idx_;
};

TEST_F(MalformedDataset, ValidDatasetOpens) {
  const IndexedDataset dataset(prefix_);
  EXPECT_EQ(dataset.sequences(), 4u);
  EXPECT_EQ(dataset.documents(), 3u);
  EXPECT_EQ(dataset.document_end(0), 2u);
}

TEST_F(MalformedDataset, BadMagic) {
  patch<char>(3, 'X');
  expect_error(idx_path(), "magic", "MMIXIDX");
}

TEST_F(MalformedDataset, FileShorterThanMagic) {
  write_bytes(idx_path(), "MMID");
  expect_error(idx_path(), "magic", "MMID");
}

TEST_F(MalformedDataset, TruncatedHeader) {
  write_bytes(idx_path(), idx_.substr(0, 20));
  expect_error(idx_path(), "header", "20 bytes");
}

TEST_F(MalformedDataset, UnsupportedVersion) {
  patch<uint64_t>(9, 2);
  expect_error(idx_path(), "version", "unsupported version 2");
}

TEST_F(MalformedDataset, FloatDtypeIsNotAToken) {
  patch<uint8_t>(17, 6);
  expect_error(idx_path(), "dtype", "never tokens");
  patch<uint8_t>(17, 7);
  expect_error(idx_path(), "dtype", "never tokens");
}

TEST_F(MalformedDataset, NonTokenIntegerDtype) {
  patch<uint8_t>(17, 5);
  expect_error(idx_path(), "dtype", "int64");
}

TEST_F(MalformedDataset, UnknownDtype) {
  patch<uint8_t>(17, 99);
  expect_error(idx_path(), "dtype", "99 (unknown code)");
}

TEST_F(MalformedDataset, SequenceCountOverrunsFile) {
  patch<uint64_t>(18, 7);  // 7 * 12 bytes > the 80 that follow the header
  expect_error(idx_path(), "sequence count", "7 sequences need 84 bytes");
  patch<uint64_t>(18, ~uint64_t(0));
  expect_error(idx_path(), "sequence count", "more than 2^64");
}

TEST_F(MalformedDataset, DocumentCountOverrunsFile) {
  patch<uint64_t>(26, 5);
  expect_error(idx_path(), "document count", "5 document index entries");
  patch<uint64_t>(26, uint64_t(1) << 62);
  expect_error(idx_path(), "document count", "document index entries");
}

TEST_F(MalformedDataset, TrailingBytesAfterDocumentIndex) {
  idx_ += "xyz";
  write_bytes(idx_path(), idx_);
  expect_error(idx_path(), "document count", "3 bytes follow");
}

TEST_F(MalformedDataset, ZeroDocumentIndexEntries) {
  patch<uint64_t>(26, 0);
  write_bytes(idx_path(), idx_.substr(0, kDocuments));
  expect_error(idx_path(), "document count", "0 entries");
}

TEST_F(MalformedDataset, NegativeSize) {
  patch<int32_t>(kSizes + 4, -2);
  expect_error(idx_path(), "sizes", "sizes[1] = -2");
}

TEST_F(MalformedDataset, BinShorterThanSizes) {
  write_bytes(bin_path(), read_bytes(bin_path()).substr(0, 18));
  expect_error(bin_path(), "size", "file is 18 bytes");
}

TEST_F(MalformedDataset, BinLongerThanSizes) {
  write_bytes(bin_path(), read_bytes(bin_path()) + "ab");
  expect_error(bin_path(), "size", "file is 22 bytes");
}

TEST_F(MalformedDataset, SizesDisagreeWithBin) {
  patch<int32_t>(kSizes + 8, 5);
  expect_error(bin_path(), "size", "11 uint16 tokens");
}

TEST_F(MalformedDataset, PointerOutOfOrder) {
  patch<int64_t>(kPointers + 16, 2);  // sequence 2 must start at byte 10
  expect_error(idx_path(), "pointers", "pointers[2] = 2 is out of order");
}

TEST_F(MalformedDataset, NegativePointer) {
  patch<int64_t>(kPointers, -8);
  expect_error(idx_path(), "pointers", "pointers[0] = -8 is out of order");
}

TEST_F(MalformedDataset, PointerOutOfBounds) {
  patch<int64_t>(kPointers + 24, 20);  // one token at byte 20 of a 20-byte file
  expect_error(idx_path(), "pointers", "pointers[3] = 20 with 1 tokens is out of bounds");
  patch<int64_t>(kPointers + 24, int64_t(1) << 62);
  expect_error(idx_path(), "pointers", "out of bounds");
}

TEST_F(MalformedDataset, PointerLeavesGap) {
  patch<int64_t>(kPointers + 8, 8);  // sequence 1 must start at byte 6
  expect_error(idx_path(), "pointers", "pointers[1] = 8 leaves a gap");
}

TEST_F(MalformedDataset, DocumentIndexNotStartingAtZero) {
  patch<int64_t>(kDocuments, 1);
  expect_error(idx_path(), "document index", "document index[0] = 1, expected 0");
}

TEST_F(MalformedDataset, DocumentIndexNotMonotone) {
  patch<int64_t>(kDocuments + 16, 1);  // 0 2 1 4
  expect_error(idx_path(), "document index", "document index[2] = 1 is not monotone");
}

TEST_F(MalformedDataset, DocumentIndexOutOfRange) {
  patch<int64_t>(kDocuments + 16, 7);
  expect_error(idx_path(), "document index", "document index[2] = 7 is out of range");
}

TEST_F(MalformedDataset, DocumentIndexNotEndingAtSequenceCount) {
  patch<int64_t>(kDocuments + 24, 3);
  expect_error(idx_path(), "document index", "last entry is 3, expected the sequence count 4");
}

TEST_F(MalformedDataset, TokenOutsideVocabularyNamesSequenceAndPosition) {
  const IndexedDataset dataset(prefix_);
  EXPECT_NO_THROW(dataset.validate_tokens(11));
  try {
    dataset.validate_tokens(8);
    FAIL() << "token 8 accepted with a vocabulary of 8";
  } catch (const DatasetError& e) {
    EXPECT_EQ(e.path(), bin_path());
    EXPECT_EQ(e.field(), "tokens");
    EXPECT_NE(std::string(e.what()).find(bin_path()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("sequence 2 position 2: token 8"), std::string::npos)
        << e.what();
  }
}

// Random byte corruptions anywhere in the .idx: opening either fails with a
// DatasetError or yields a dataset whose every sequence can be read (an
// AddressSanitizer build turns any out-of-bounds read into a failure).
TEST_F(MalformedDataset, RandomCorruptionsAreRejectedOrHarmless) {
  const uint64_t seed = cmpi::testing::test_seed();
  SCOPED_TRACE("CMPI_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const std::string valid = idx_;
  for (int round = 0; round < 300; ++round) {
    idx_ = valid;
    for (int flips = 1 + int(rng() % 3); flips > 0; --flips) {
      idx_[rng() % idx_.size()] = char(rng());
    }
    write_bytes(idx_path(), idx_);
    try {
      const IndexedDataset dataset(prefix_);
      std::vector<int32_t> tokens;
      for (size_t s = 0; s < dataset.sequences(); ++s) dataset.copy_sequence(s, tokens);
      for (size_t d = 0; d < dataset.documents(); ++d) {
        ASSERT_LE(dataset.document_begin(d), dataset.document_end(d));
        ASSERT_LE(dataset.document_end(d), dataset.sequences());
      }
    } catch (const DatasetError& e) {
      ASSERT_EQ(e.path().empty(), false);
      ASSERT_NE(std::string(e.what()).find(e.field()), std::string::npos);
    }
  }
}

TEST_F(MalformedDataset, MissingBinIsNamed) {
  std::remove(bin_path().c_str());
  try {
    IndexedDataset dataset(prefix_);
    FAIL() << "opened without a .bin";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(bin_path()), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cmpi::data
