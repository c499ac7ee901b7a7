// Test-only fault injection for the restart tests: a rank that dies at a
// given step as a crashed node would, by raising SIGKILL (no handler, no
// message, no flush beyond what it printed).
//
//   CMPI_TEST_KILL_AT_STEP="R:S[,R:S...]"
//
// Entry k (counting from 1) applies to launch attempt k only, the attempt
// being CMPI_RUN_ATTEMPT (set by scripts/cmpi-run; 1 when unset): attempt k's
// world rank R kills itself as it begins step S (1-based, as "step S/N" is
// printed: after S - 1 steps and any checkpoint saved after step S - 1).
// So "1:60,2:130" kills rank 1 at step 60 in the first attempt, rank 2 at
// step 130 in the second, and lets the third run to the end.
#pragma once

#include <cstdint>
#include <string>

namespace cmpi::trainer {

struct InjectedKill {
  int rank = -1;  // -1: none
  int64_t step = -1;
};

// `spec`, `attempt`: the variables' values ("" when unset). Throws
// std::invalid_argument naming the variable and the bad text.
InjectedKill injected_kill_for(const std::string& spec, const std::string& attempt);

// Reads both variables from the environment.
InjectedKill injected_kill_from_environment();

}  // namespace cmpi::trainer
