// RandomBlocks: bulk uniform random bits for the stochastic quantizers (qsgd,
// natural), which need one fresh uniform number per value and would spend
// most of their time in a one-at-a-time generator. Four independent
// xoshiro128** generators (Blackman and Vigna, "Scrambled linear
// pseudorandom number generators", 2021) run side by side, one per 32-bit
// lane of an SSE2 register; output j of a block comes from lane j % 4. The
// lanes are seeded from a SplitMix64 stream of the codec's seed, as the
// xoshiro authors recommend, so seeds that differ in one bit give unrelated
// streams. Each lane has period 2^128 - 1. The scalar fallback (non-x86)
// produces the same numbers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cmpi::compress {

class RandomBlocks {
 public:
  explicit RandomBlocks(uint64_t seed);

  // Writes count uniform integers of `bits` bits (1..32, the top bits of
  // each 32-bit output) to out. The state advances by ceil(count / 4) steps.
  void fill(uint32_t* out, size_t count, unsigned bits);

  // The whole state as eight 64-bit words (lane pairs), and back; checkpoints
  // save it so a resumed run draws what the uninterrupted one would.
  // set_state throws std::invalid_argument "<owner>: random state of N words,
  // expected 8" for any other count.
  std::vector<uint64_t> state() const;
  void set_state(const std::vector<uint64_t>& words, const std::string& owner);

  // The same numbers from plain scalar code (the reference the SSE2 path is
  // tested against, and the path on CPUs without SSE2).
  void fill_reference(uint32_t* out, size_t count, unsigned bits);

 private:
  // state_[word][lane]: word w of lane l's xoshiro128** state.
  alignas(16) uint32_t state_[4][4];
};

}  // namespace cmpi::compress
