// The Communicator's 16-bit word calls (comm/communicator_words16.cpp) on
// 2..8 ranks: raw words are bit for bit what MPI moves (sums: within one
// 16-bit rounding per step of the exact sum, the same bits on every rank,
// and with two ranks exactly a + b rounded once); mpc carries the words
// losslessly; zfp in accuracy mode stays within its tolerance plus the
// final 16-bit rounding; a rule restricted to one word type routes only that
// type; stats count 2 bytes per element; block_sparse and a float32 word
// type are refused with messages naming what is wrong.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/policy.h"
#include "compress/word_type.h"
#include "tests/comm/communicator_test_support.h"
#include "tests/support/mpi_world.h"
#include "tests/support/test_seed.h"

namespace cmpi::comm {
namespace {

using communicator_testing::everything_through;
using communicator_testing::make_comm;
using compress::WordType;
using testing::world_rank;
using testing::world_size;

constexpr WordType kTypes[] = {WordType::kBFloat16, WordType::kFloat16};

// Rank `rank`'s values for call `salt` as words of `type`: any rank can
// regenerate any other's.
std::vector<uint16_t> words_of(int rank, size_t n, uint64_t salt, WordType type) {
  std::mt19937_64 gen = communicator_testing::rank_generator(rank, salt);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<uint16_t> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] =
        compress::round_to_word(float(std::sin(0.01 * double(i) + rank)) + 0.1f * dist(gen), type);
  return v;
}

std::vector<float> widened(const std::vector<uint16_t>& words, WordType type) {
  std::vector<float> out(words.size());
  compress::widen_words(words.data(), words.size(), type, out.data());
  return out;
}

// Every rank's result equals rank 0's, bit for bit.
void expect_same_on_every_rank(const std::vector<uint16_t>& mine) {
  std::vector<uint16_t> first = mine;
  MPI_Bcast(first.data(), int(first.size()), MPI_UINT16_T, 0, MPI_COMM_WORLD);
  EXPECT_EQ(first, mine) << "rank " << world_rank() << " seed " << cmpi::testing::test_seed();
}

// The allreduce of everyone's words against the exact sum: within one
// rounding of the 16-bit type per reduction step, the same on every rank;
// with two ranks exactly a + b rounded once.
void check_allreduce(Communicator& comm, WordType type, size_t n, uint64_t salt) {
  const int size = world_size();
  std::vector<uint16_t> data = words_of(world_rank(), n, salt, type);
  comm.allreduce(data.data(), n, type, Role::kActivation);
  const double unit = type == WordType::kBFloat16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
  std::vector<double> exact(n, 0.0), magnitude(n, 0.0);
  std::vector<float> pair(n, 0.0f);
  for (int r = 0; r < size; ++r) {
    const auto values = widened(words_of(r, n, salt, type), type);
    for (size_t i = 0; i < n; ++i) {
      exact[i] += values[i];
      magnitude[i] += std::fabs(values[i]);
      pair[i] += values[i];
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const float got = compress::widen_word(data[i], type);
    if (size == 2) {
      ASSERT_EQ(data[i], compress::round_to_word(pair[i], type))
          << compress::word_type_name(type) << " i=" << i << " seed " << cmpi::testing::test_seed();
    } else {
      ASSERT_LE(std::fabs(got - exact[i]), double(size) * unit * magnitude[i] + 1e-6)
          << compress::word_type_name(type) << " i=" << i << " seed " << cmpi::testing::test_seed();
    }
  }
  expect_same_on_every_rank(data);
}

TEST(Words16, RawAllreduceSumsOnceRoundedPerStepAndCountsTwoBytes) {
  for (WordType type : kTypes) {
    auto comm = make_comm(nullptr);
    check_allreduce(*comm, type, 1003, 1);
    EXPECT_EQ(comm->stats().at(Op::kAllreduce).raw_bytes,
              ring_allreduce_bytes(1003, world_rank(), world_size(), 2));
    EXPECT_EQ(comm->stats().at(Op::kAllreduce).wire_bytes,
              comm->stats().at(Op::kAllreduce).raw_bytes);
  }
}

TEST(Words16, RawAllgatherAndPointToPointAreBitForBit) {
  const int rank = world_rank(), size = world_size();
  for (WordType type : kTypes) {
    auto comm = make_comm(nullptr);
    std::vector<size_t> counts(static_cast<size_t>(size));
    for (int r = 0; r < size; ++r) counts[size_t(r)] = size_t(17 * r + 3);
    const size_t total = std::accumulate(counts.begin(), counts.end(), size_t(0));
    const auto mine = words_of(rank, counts[size_t(rank)], 2, type);
    std::vector<uint16_t> out(total);
    comm->allgather(mine.data(), out.data(), counts, type, Role::kActivation);
    std::vector<uint16_t> expected;
    for (int r = 0; r < size; ++r) {
      const auto theirs = words_of(r, counts[size_t(r)], 2, type);
      expected.insert(expected.end(), theirs.begin(), theirs.end());
    }
    EXPECT_EQ(out, expected) << "seed " << cmpi::testing::test_seed();

    // A ring of sends: blocking one way, nonblocking the other.
    const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    const auto sent = words_of(rank, 501, 3, type);
    std::vector<uint16_t> got(501), got_back(501);
    Communicator::Request out_req = comm->isend(sent.data(), 501, type, next, 7, Role::kActivation);
    Communicator::Request in_req = comm->irecv(got_back.data(), 501, type, next, 8, Role::kOther);
    comm->recv(got.data(), 501, type, prev, 7, Role::kActivation);
    comm->send(got.data(), 501, type, prev, 8, Role::kOther);
    comm->wait(out_req);
    comm->wait(in_req);
    EXPECT_EQ(got, words_of(prev, 501, 3, type));
    EXPECT_EQ(got_back, sent);
    EXPECT_EQ(comm->stats().at(Op::kSendRecv).raw_bytes, 2u * 501u * 2u);
  }
}

TEST(Words16, RawReduceScatterMatchesTheAllreduce) {
  const int rank = world_rank(), size = world_size();
  for (WordType type : kTypes) {
    auto comm = make_comm(nullptr);
    const std::vector<size_t> counts(size_t(size), 64);
    const size_t total = 64 * size_t(size);
    auto in = words_of(rank, total, 4, type);
    std::vector<uint16_t> out(64);
    comm->reduce_scatter(in.data(), out.data(), counts, type, Role::kActivation);
    comm->allreduce(in.data(), total, type, Role::kActivation);
    if (size == 2)  // one reduction step either way
      EXPECT_EQ(out, std::vector<uint16_t>(in.begin() + 64 * rank, in.begin() + 64 * (rank + 1)));
    for (size_t i = 0; i < 64; ++i)
      EXPECT_NEAR(compress::widen_word(out[i], type),
                  compress::widen_word(in[64 * size_t(rank) + i], type), 0.05 * size);
  }
}

TEST(Words16, MpcCarriesWordsLosslesslyAndCountsAgainstTwoBytes) {
  const int rank = world_rank(), size = world_size();
  Policy mpc(everything_through(compress::CodecSpec("mpc"), 4096));  // 1024 floats a chunk
  for (WordType type : kTypes) {
    auto comm = make_comm(&mpc);
    // Several chunks, odd counts (a half-filled last pair), and a zero count.
    std::vector<size_t> counts(static_cast<size_t>(size));
    for (int r = 0; r < size; ++r) counts[size_t(r)] = r == 1 ? 0 : size_t(5001 + 2 * r);
    const size_t total = std::accumulate(counts.begin(), counts.end(), size_t(0));
    auto mine = words_of(rank, counts[size_t(rank)], 5, type);
    if (!mine.empty()) mine[0] = 0x8000;  // -0.0 must stay -0.0
    std::vector<uint16_t> out(total);
    comm->allgather(mine.data(), out.data(), counts, type, Role::kActivation);
    size_t at = 0;
    for (int r = 0; r < size; ++r) {
      auto theirs = words_of(r, counts[size_t(r)], 5, type);
      if (!theirs.empty()) theirs[0] = 0x8000;
      ASSERT_EQ(std::vector<uint16_t>(out.begin() + at, out.begin() + at + theirs.size()), theirs)
          << "block of rank " << r << " seed " << cmpi::testing::test_seed();
      at += theirs.size();
    }
    const OpCounters& gather = comm->stats().at(Op::kAllgather);
    EXPECT_EQ(gather.raw_bytes, uint64_t(total - counts[size_t((rank + 1) % size)]) * 2);
    EXPECT_EQ(gather.compressed_calls, 1u);

    const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    const auto sent = words_of(rank, 9999, 6, type);
    std::vector<uint16_t> got(9999);
    Communicator::Request out_req =
        comm->isend(sent.data(), 9999, type, next, 3, Role::kActivation);
    comm->recv(got.data(), 9999, type, prev, 3, Role::kActivation);
    comm->wait(out_req);
    EXPECT_EQ(got, words_of(prev, 9999, 6, type)) << "seed " << cmpi::testing::test_seed();
    const OpCounters& p2p = comm->stats().at(Op::kSendRecv);
    EXPECT_EQ(p2p.raw_bytes, 9999u * 2u);
    // Smooth 16-bit values compress below their 2 bytes each.
    EXPECT_LT(p2p.wire_bytes, p2p.raw_bytes);

    // Sums go widened through the float ring: mpc is lossless there too.
    check_allreduce(*comm, type, 3001, 7);
  }
}

TEST(Words16, ZfpOnWordsStaysWithinItsToleranceAndTheFinalRounding) {
  const int rank = world_rank(), size = world_size();
  const double tolerance = 1e-2;
  Policy zfp(everything_through(
      compress::CodecSpec("zfp", {{"mode", "accuracy"}, {"tolerance", "0.01"}}), 4096));
  for (WordType type : kTypes) {
    auto comm = make_comm(&zfp);
    const double unit = type == WordType::kBFloat16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
    const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    const size_t n = 20000;  // several chunks and pieces
    const auto sent = words_of(rank, n, 8, type);
    std::vector<uint16_t> got(n);
    Communicator::Request out_req = comm->isend(sent.data(), n, type, next, 4, Role::kActivation);
    comm->recv(got.data(), n, type, prev, 4, Role::kActivation);
    comm->wait(out_req);
    const auto original = widened(words_of(prev, n, 8, type), type);
    for (size_t i = 0; i < n; ++i)
      ASSERT_LE(std::fabs(compress::widen_word(got[i], type) - original[i]),
                tolerance + unit * (std::fabs(original[i]) + tolerance))
          << compress::word_type_name(type) << " i=" << i << " seed " << cmpi::testing::test_seed();
    const OpCounters& p2p = comm->stats().at(Op::kSendRecv);
    EXPECT_EQ(p2p.raw_bytes, n * 2);
    EXPECT_GT(p2p.wire_bytes, 0u);

    std::vector<uint16_t> gathered(n * size_t(size));
    comm->allgather(sent.data(), gathered.data(), std::vector<size_t>(size_t(size), n), type,
                    Role::kActivation);
    for (int r = 0; r < size; ++r) {
      const auto theirs = widened(words_of(r, n, 8, type), type);
      for (size_t i = 0; i < n; ++i)
        ASSERT_LE(std::fabs(compress::widen_word(gathered[size_t(r) * n + i], type) - theirs[i]),
                  tolerance + unit * (std::fabs(theirs[i]) + tolerance))
            << "rank " << r << " i=" << i << " seed " << cmpi::testing::test_seed();
    }
    expect_same_on_every_rank(gathered);
  }
}

// A rule restricted to bf16 words (`match: {word: bf16}`) compresses bf16
// sends and nothing else: fp16 words and float32 buffers of the same size
// find no rule and travel raw. fp8 e4m3 halves the bf16 bytes (one byte a
// value, a scale byte per 1024, a header per chunk) and keeps every
// value within its bound: relative 2^-4 in its normal range, then the
// rounding back to bf16 (2^-8).
TEST(Words16, WordRestrictedRuleRoutesOnlyItsWordType) {
  const int rank = world_rank(), size = world_size();
  PolicyConfig config = everything_through(compress::CodecSpec("fp8"), 1 << 20);
  config.rules[0].match.words = {WordType::kBFloat16};
  Policy bf16_only(config);
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  const size_t n = 300000;  // two chunks of 262144 floats
  const uint64_t chunk_payload = 48 + 262144 + 256;
  const uint64_t last_payload = 48 + (n - 262144) + (n - 262144 + 1023) / 1024;
  for (WordType type : kTypes) {
    auto comm = make_comm(&bf16_only);
    const auto sent = words_of(rank, n, 10, type);
    std::vector<uint16_t> got(n);
    Communicator::Request out_req = comm->isend(sent.data(), n, type, next, 5, Role::kActivation);
    comm->recv(got.data(), n, type, prev, 5, Role::kActivation);
    comm->wait(out_req);
    const OpCounters& p2p = comm->stats().at(Op::kSendRecv);
    EXPECT_EQ(p2p.raw_bytes, n * 2);
    const auto original = widened(words_of(prev, n, 10, type), type);
    if (type == WordType::kFloat16) {
      EXPECT_EQ(p2p.compressed_calls, 0u);
      EXPECT_EQ(p2p.wire_bytes, p2p.raw_bytes);
      EXPECT_EQ(got, words_of(prev, n, 10, type));
      continue;
    }
    EXPECT_EQ(p2p.compressed_calls, 1u);
    // The transfer's framing adds under 1 KiB on top of the payloads.
    EXPECT_GE(p2p.wire_bytes, chunk_payload + last_payload);
    EXPECT_LE(p2p.wire_bytes, chunk_payload + last_payload + 1024);
    EXPECT_LT(double(p2p.wire_bytes) / double(p2p.raw_bytes), 0.503);
    for (size_t i = 0; i < n; ++i) {
      const double x = original[i], y = compress::widen_word(got[i], type);
      // |x| >= 2^-6 of the block's scale is in e4m3's normal range; the
      // words here lie in [-1.6, 1.6], so 2^-k <= 2^-7 and 2^-13 bounds the
      // absolute floor.
      ASSERT_LE(std::fabs(y - x), std::max(std::fabs(x) * (0x1p-4 + 0x1p-8), 0x1p-13))
          << "i=" << i << " seed " << cmpi::testing::test_seed();
    }
  }

  // The same sizes as float32: no rule for them either.
  auto comm = make_comm(&bf16_only);
  std::vector<float> floats(n, 0.5f), floats_in(n);
  Communicator::Request out_req = comm->isend(floats.data(), n, next, 6, Role::kActivation);
  comm->recv(floats_in.data(), n, prev, 6, Role::kActivation);
  comm->wait(out_req);
  EXPECT_EQ(comm->stats().at(Op::kSendRecv).compressed_calls, 0u);
  EXPECT_EQ(floats_in, floats);
}

TEST(Words16, IdentityAndTheSameCastTravelRaw) {
  Policy identity(everything_through(compress::CodecSpec("identity"), 4096));
  Policy bf16(everything_through(compress::CodecSpec("bf16"), 4096));
  for (const Policy* policy : {&identity, &bf16}) {
    auto comm = make_comm(policy);
    check_allreduce(*comm, WordType::kBFloat16, 777, 9);
    const OpCounters& c = comm->stats().at(Op::kAllreduce);
    EXPECT_EQ(c.compressed_calls, 0u);
    EXPECT_EQ(c.wire_bytes, c.raw_bytes);
  }
}

TEST(Words16, UnsupportedCombinationsAreRefusedByName) {
  Policy sparse(everything_through(
      compress::CodecSpec("block_sparse", {{"block", "256"}, {"select", "always"}}), 4096));
  auto comm = make_comm(&sparse);
  std::vector<uint16_t> data(512, 0x3f80);
  try {
    comm->allreduce(data.data(), data.size(), WordType::kBFloat16, Role::kActivation);
    ADD_FAILURE() << "block_sparse on 16-bit words was accepted";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    for (const char* part :
         {"group world", "allreduce", "bf16", "role activation", "block_sparse", "test rule"})
      EXPECT_NE(what.find(part), std::string::npos) << what << " lacks " << part;
  }
  auto plain = make_comm(nullptr);
  try {
    plain->allreduce(data.data(), data.size(), WordType::kFloat32, Role::kActivation);
    ADD_FAILURE() << "float32 words were accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("float32"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cmpi::comm
