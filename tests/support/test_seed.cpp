#include "tests/support/test_seed.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace cmpi::testing {
namespace {

struct SeedState {
  bool set = false;
  uint64_t value = 0;
};

SeedState& state() {
  static SeedState s;  // test-process scope only; the library itself keeps no globals
  return s;
}

}  // namespace

void set_test_seed(uint64_t seed) {
  state().set = true;
  state().value = seed;
}

uint64_t test_seed() {
  SeedState& s = state();
  if (!s.set) {
    const char* env = std::getenv("CMPI_TEST_SEED");
    s.value = env ? std::strtoull(env, nullptr, 10)
                  : uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
    s.set = true;
    std::fprintf(stderr, "[test seed] CMPI_TEST_SEED=%llu\n", (unsigned long long)s.value);
  }
  return s.value;
}

}  // namespace cmpi::testing
