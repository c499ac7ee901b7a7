// SplitMix64 (Steele, Lea, Flood 2014): add the golden-ratio constant, then a
// bijective mixer of xor-shifts and multiplies. Used wherever the project
// needs a cheap, well-spread 64-bit hash of an integer (seeds derived from
// names, ranks or keys) or a counter-based random stream (RandomStream);
// keeping a single definition means every layer derives the same values.
#pragma once

#include <cstdint>

namespace cmpi::compress {

// The increment of the SplitMix64 counter: 2^64 divided by the golden ratio.
inline constexpr uint64_t kSplitMix64Gamma = 0x9e3779b97f4a7c15ull;

// The output mixer alone, applied to an already advanced counter.
inline constexpr uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// One SplitMix64 step from state x: the value the generator seeded with x
// returns first. As a hash, distinct inputs give distinct outputs.
inline constexpr uint64_t splitmix64(uint64_t x) {
  return splitmix64_mix(x + kSplitMix64Gamma);
}

}  // namespace cmpi::compress
