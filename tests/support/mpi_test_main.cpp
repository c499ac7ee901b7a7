// main() for MPI test executables: initializes MPI, shares one random seed
// across ranks, runs the tests on every rank, and makes the job fail if any
// rank failed. Only rank 0 prints the normal gtest report; other ranks print
// failures only, prefixed with their rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

#include "tests/support/test_seed.h"

namespace {

class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", rank_,
                 result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.summary());
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  // MULTIPLE, as cmpi-train asks: the ZeRO optimizer's overlapped gradient
  // reduction runs collectives on its own thread.
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);

  unsigned long long seed = rank == 0 ? cmpi::testing::test_seed() : 0;
  MPI_Bcast(&seed, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  cmpi::testing::set_test_seed(seed);

  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  if (rank != 0) {
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(rank));
  }
  int local_failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int any_failed = 0;
  MPI_Allreduce(&local_failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && any_failed) std::fprintf(stderr, "some rank failed (see [rank N] lines)\n");
  MPI_Finalize();
  return any_failed;
}
