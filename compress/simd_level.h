// SimdLevel: which instruction-set variant a hot loop runs. The library is
// built for x86-64-v2; AVX2 variants are compiled per function with
// __attribute__((target("avx2"))) and chosen at run time, so one binary runs
// on any x86-64-v2 CPU and uses AVX2 where the CPU has it. kScalar is the
// portable reference every SIMD variant must match bit for bit.
#pragma once

namespace cmpi::compress {

enum class SimdLevel { kScalar, kAvx2 };

inline bool simd_level_supported(SimdLevel level) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (level == SimdLevel::kAvx2) return __builtin_cpu_supports("avx2");
  return true;
#else
  return level == SimdLevel::kScalar;
#endif
}

// The fastest level this CPU runs.
inline SimdLevel best_simd_level() {
  return simd_level_supported(SimdLevel::kAvx2) ? SimdLevel::kAvx2 : SimdLevel::kScalar;
}

inline const char* simd_level_name(SimdLevel level) {
  return level == SimdLevel::kAvx2 ? "avx2" : "scalar";
}

}  // namespace cmpi::compress
