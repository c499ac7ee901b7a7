// The Communicator's control calls under MPI: every ControlReduce gives the
// exact reduction over the ranks for each element type, control_gather puts
// every rank's bytes at the root in rank order, and none of them touches the
// group's data statistics (they are no part of a step's traffic), even under
// a policy that sends every data message through a codec. Data is drawn from
// the printed test seed, so every rank regenerates every other rank's values
// and expectations need no MPI.
#include <gtest/gtest.h>
#include <mpi.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "comm/communicator.h"
#include "comm/policy.h"
#include "tests/comm/communicator_test_support.h"
#include "tests/support/mpi_world.h"
#include "tests/support/test_seed.h"

namespace cmpi::comm {
namespace {

using communicator_testing::everything_through;
using communicator_testing::make_comm;
using communicator_testing::rank_generator;
using testing::world_rank;
using testing::world_size;

constexpr ControlReduce kAllReductions[] = {ControlReduce::kSum, ControlReduce::kMax,
                                            ControlReduce::kMin, ControlReduce::kBitOr};

std::string seed_text() {
  return "test seed " + std::to_string(cmpi::testing::test_seed());
}

// Rank `rank`'s n values of type T for the call `salt`. Sums stay exact and
// in range whatever MPI's order: integers small enough for size() of them,
// doubles multiples of 1/8 below 2^20. Bit-or draws every bit.
template <class T>
std::vector<T> values_of(int rank, size_t n, uint64_t salt, ControlReduce op) {
  std::mt19937_64 gen = rank_generator(rank, salt);
  std::vector<T> v(n);
  for (T& x : v) {
    const uint64_t bits = gen();
    if (op == ControlReduce::kBitOr) {
      std::memcpy(&x, &bits, sizeof(T));
    } else if constexpr (std::is_same_v<T, double>) {
      x = double(int64_t(bits % (uint64_t(1) << 24)) - (int64_t(1) << 23)) / 8.0;
    } else if constexpr (std::is_signed_v<T>) {
      x = T(int64_t(bits % (uint64_t(1) << 24)) - (int64_t(1) << 23));
    } else {
      x = T(bits >> 12);  // below 2^52: 8 ranks of them fit
    }
  }
  return v;
}

template <class T>
T reduce(T a, T b, ControlReduce op) {
  switch (op) {
    case ControlReduce::kSum:
      return a + b;
    case ControlReduce::kMax:
      return a > b ? a : b;
    case ControlReduce::kMin:
      return a < b ? a : b;
    case ControlReduce::kBitOr:
      if constexpr (std::is_integral_v<T>) return T(a | b);
  }
  ADD_FAILURE() << "no reduction " << to_string(op);
  return a;
}

template <class T>
void expect_reduction(Communicator& comm, const char* type, uint64_t salt) {
  for (ControlReduce op : kAllReductions) {
    if (op == ControlReduce::kBitOr && !std::is_integral_v<T>) continue;
    for (size_t n : {size_t(1), size_t(2), size_t(37)}) {
      const uint64_t call = salt * 100 + uint64_t(op) * 10 + n;
      std::vector<T> data = values_of<T>(comm.rank(), n, call, op);
      std::vector<T> want = values_of<T>(0, n, call, op);
      for (int r = 1; r < comm.size(); ++r) {
        const std::vector<T> theirs = values_of<T>(r, n, call, op);
        for (size_t i = 0; i < n; ++i) want[i] = reduce(want[i], theirs[i], op);
      }
      comm.control_allreduce(data.data(), n, op);
      for (size_t i = 0; i < n; ++i)
        if (std::memcmp(&data[i], &want[i], sizeof(T)) != 0) {
          ADD_FAILURE() << type << " " << to_string(op) << " of " << n << " elements over "
                        << comm.size() << " ranks: element " << i << " is " << data[i]
                        << ", expected " << want[i] << " (" << seed_text() << ")";
          break;
        }
    }
  }
}

TEST(CommunicatorControl, EveryReductionIsExactForEveryElementType) {
  auto comm = make_comm(nullptr);
  expect_reduction<int32_t>(*comm, "int32", 1);
  expect_reduction<int64_t>(*comm, "int64", 2);
  expect_reduction<uint64_t>(*comm, "uint64", 3);
  expect_reduction<double>(*comm, "double", 4);
}

// Rank `rank`'s record of `bytes` bytes for the call `salt`.
std::vector<std::byte> record_of(int rank, size_t bytes, uint64_t salt) {
  std::mt19937_64 gen = rank_generator(rank, salt);
  std::vector<std::byte> v(bytes);
  for (std::byte& b : v) b = std::byte(gen() & 0xff);
  return v;
}

TEST(CommunicatorControl, GatherPutsEveryRanksBytesAtTheRootInRankOrder) {
  auto comm = make_comm(nullptr);
  const int size = comm->size();
  for (int root : {0, size - 1, size / 2}) {
    for (size_t bytes : {size_t(1), size_t(37), size_t(4096)}) {
      const uint64_t call = uint64_t(root) * 10000 + bytes;
      const std::vector<std::byte> own = record_of(comm->rank(), bytes, call);
      const std::vector<std::byte> got = comm->control_gather(own.data(), bytes, root);
      if (comm->rank() != root) {
        EXPECT_TRUE(got.empty()) << "rank " << comm->rank() << " is not root " << root;
        continue;
      }
      ASSERT_EQ(got.size(), size_t(size) * bytes) << "root " << root;
      for (int r = 0; r < size; ++r) {
        const std::vector<std::byte> want = record_of(r, bytes, call);
        EXPECT_EQ(std::memcmp(got.data() + size_t(r) * bytes, want.data(), bytes), 0)
            << "root " << root << ": rank " << r << "'s " << bytes << " bytes differ ("
            << seed_text() << ")";
      }
    }
  }
}

struct Record {
  int32_t rank;
  double value;
  char name[13];
};

TEST(CommunicatorControl, TypedGatherReturnsOneRecordPerRank) {
  auto comm = make_comm(nullptr);
  Record mine{};
  mine.rank = comm->rank();
  mine.value = 0.5 * comm->rank();
  std::snprintf(mine.name, sizeof mine.name, "rank-%d", comm->rank());
  const std::vector<Record> got = comm->control_gather(mine, 0);
  if (comm->rank() != 0) {
    EXPECT_TRUE(got.empty());
    return;
  }
  ASSERT_EQ(got.size(), size_t(comm->size()));
  for (int r = 0; r < comm->size(); ++r) {
    EXPECT_EQ(got[size_t(r)].rank, r);
    EXPECT_EQ(got[size_t(r)].value, 0.5 * r);
    EXPECT_EQ(std::string(got[size_t(r)].name), "rank-" + std::to_string(r));
  }
}

// Control calls leave every data counter as it was, with or without a policy
// that would compress every data message, and only control_calls() moves.
TEST(CommunicatorControl, LeavesTheDataStatisticsUnchanged) {
  const Policy identity(everything_through(compress::CodecSpec("identity"), 1024));
  for (const Policy* policy : {static_cast<const Policy*>(nullptr), &identity}) {
    auto comm = make_comm(policy);
    std::vector<float> data(4096, 1.0f);
    comm->allreduce(data.data(), data.size(), Role::kGradient);  // some data traffic first
    const std::string before = comm->stats().to_json();
    const OpCounters total_before = comm->stats().total();
    const uint64_t control_before = comm->control_calls();

    int32_t flags[2] = {comm->rank() % 2, 1 << comm->rank() % 31};
    comm->control_allreduce(flags, 2, ControlReduce::kBitOr);
    int64_t count = comm->rank();
    comm->control_allreduce(&count, 1, ControlReduce::kSum);
    uint64_t sizes[3] = {1, 2, 3};
    comm->control_allreduce(sizes, 3, ControlReduce::kMax);
    std::vector<double> times(1000, 0.25 * comm->rank());  // larger than a chunk
    comm->control_allreduce(times.data(), times.size(), ControlReduce::kMin);
    const auto gathered = comm->control_gather(data.data(), data.size() * sizeof(float), 0);

    const std::string which = policy ? "identity policy" : "no policy";
    EXPECT_EQ(comm->stats().to_json(), before) << which;
    EXPECT_EQ(comm->stats().total().calls, total_before.calls) << which;
    EXPECT_EQ(comm->stats().total().wire_bytes, total_before.wire_bytes) << which;
    EXPECT_EQ(comm->control_calls(), control_before + 5) << which;
    EXPECT_EQ(count, int64_t(comm->size()) * (comm->size() - 1) / 2) << which;
    EXPECT_EQ(times.back(), 0.0) << which;
  }
}

// Refused arguments throw on every rank alike (no rank is left waiting), name
// the group and the call, and count no call.
TEST(CommunicatorControl, RefusesBadArgumentsOnEveryRank) {
  auto comm = make_comm(nullptr);
  int32_t flag = 0;
  double value = 0;
  char byte = 0;
  auto message_of = [](const auto& call) -> std::string {
    try {
      call();
    } catch (const std::exception& e) {
      return e.what();
    }
    return "(nothing thrown)";
  };
  const std::string root_error = message_of([&] { comm->control_gather(&byte, 1, comm->size()); });
  EXPECT_NE(root_error.find("group world"), std::string::npos) << root_error;
  EXPECT_NE(root_error.find("root " + std::to_string(comm->size())), std::string::npos)
      << root_error;
  EXPECT_THROW(comm->control_gather(&byte, 1, -1), std::invalid_argument);
  EXPECT_THROW(comm->control_allreduce(&flag, size_t(INT_MAX) + 1, ControlReduce::kSum),
               std::length_error);
  EXPECT_THROW(comm->control_gather(&byte, size_t(INT_MAX) + 1, 0), std::length_error);
  const std::string bit_or_error =
      message_of([&] { comm->control_allreduce(&value, 1, ControlReduce::kBitOr); });
  EXPECT_NE(bit_or_error.find("bit_or"), std::string::npos) << bit_or_error;
  EXPECT_NE(bit_or_error.find("group world"), std::string::npos) << bit_or_error;
  EXPECT_THROW(comm->control_allreduce(static_cast<int32_t*>(nullptr), 1, ControlReduce::kSum),
               std::invalid_argument);
  EXPECT_EQ(comm->control_calls(), 0u);
  // The communicator still works after the refusals.
  comm->control_allreduce(&flag, 1, ControlReduce::kSum);
  EXPECT_EQ(comm->control_calls(), 1u);
}

}  // namespace
}  // namespace cmpi::comm
