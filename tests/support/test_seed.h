// Seeds for randomized tests: fresh each run unless CMPI_TEST_SEED is set,
// and always printed, so a failure can be replayed with the same data.
#pragma once

#include <cstdint>

namespace cmpi::testing {

// The run's base seed: CMPI_TEST_SEED if set, else drawn from the clock once
// per process. Logged to stderr on first use. In MPI tests all ranks agree on
// it (rank 0's value is broadcast by the MPI test main).
uint64_t test_seed();

// Overrides the base seed (used by the MPI main to share rank 0's seed).
void set_test_seed(uint64_t seed);

}  // namespace cmpi::testing
