// Shared pieces of the Communicator's MPI tests (communicator_mpi_test.cpp,
// words16_mpi_test.cpp, device_communicator_test_support.h): a Communicator
// over a private duplicate of MPI_COMM_WORLD, with or without a policy; a
// policy of one rule that sends every message through one codec; uneven
// per-rank counts; and the generator of a rank's data for one call, seeded from the printed test
// seed, the call's salt and the rank, so that every rank can regenerate every other rank's data and
// expectations need no MPI.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "comm/communicator.h"
#include "comm/policy.h"
#include "tests/support/test_seed.h"

namespace cmpi::comm::communicator_testing {

// The generator of rank `rank`'s data for the call identified by `salt`.
inline std::mt19937_64 rank_generator(int rank, uint64_t salt) {
  return std::mt19937_64(cmpi::testing::test_seed() ^ (salt * 0x9e3779b97f4a7c15ull) ^
                         (uint64_t(rank + 1) << 40));
}

// A world Communicator on its own duplicate of MPI_COMM_WORLD (so its
// messages never meet another test's); no policy: every message raw.
inline std::unique_ptr<Communicator> make_comm(const Policy* policy) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  if (policy == nullptr) return std::make_unique<Communicator>(comm, GroupKind::kWorld);
  return std::make_unique<Communicator>(comm, GroupKind::kWorld,
                                        std::make_unique<PolicySlice>(*policy, GroupKind::kWorld));
}

// One rule for every message, whatever its size.
inline PolicyConfig everything_through(compress::CodecSpec codec, int64_t chunk_bytes) {
  PolicyConfig config;
  PolicyRule rule;
  rule.match.min_bytes = 0;
  rule.codec = std::move(codec);
  rule.origin = "test rule";
  config.rules.push_back(rule);
  config.chunk_bytes = chunk_bytes;
  return config;
}

// n elements dealt to `ranks` ranks unevenly (some get none when n is small).
inline std::vector<size_t> uneven(size_t n, int ranks, int shift) {
  std::vector<size_t> counts(size_t(ranks), 0);
  for (size_t i = 0; i < n; ++i) counts[(i * 7 + size_t(shift)) % size_t(ranks)] += 1;
  return counts;
}

}  // namespace cmpi::comm::communicator_testing
