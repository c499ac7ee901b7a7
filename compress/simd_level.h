// SimdLevel: which instruction-set variant a hot loop runs. SIMD variants are
// compiled per function with __attribute__((target(...))) and chosen at run
// time, so one binary runs on any x86-64 CPU and uses AVX2 where the CPU has
// it. kScalar is the portable reference every SIMD variant must match bit for
// bit; a stage without a variant for some level runs its scalar code there.
#pragma once

namespace cmpi::compress {

enum class SimdLevel { kScalar, kSsse3, kAvx2 };

inline bool simd_level_supported(SimdLevel level) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (level == SimdLevel::kAvx2) return __builtin_cpu_supports("avx2");
  // The SSSE3 variants also use popcnt, which every later CPU has.
  if (level == SimdLevel::kSsse3)
    return __builtin_cpu_supports("ssse3") && __builtin_cpu_supports("popcnt");
  return true;
#else
  return level == SimdLevel::kScalar;
#endif
}

// The fastest level this CPU runs.
inline SimdLevel best_simd_level() {
  if (simd_level_supported(SimdLevel::kAvx2)) return SimdLevel::kAvx2;
  if (simd_level_supported(SimdLevel::kSsse3)) return SimdLevel::kSsse3;
  return SimdLevel::kScalar;
}

inline const char* simd_level_name(SimdLevel level) {
  switch (level) {
    case SimdLevel::kAvx2:
      return "avx2";
    case SimdLevel::kSsse3:
      return "ssse3";
    case SimdLevel::kScalar:
      break;
  }
  return "scalar";
}

}  // namespace cmpi::compress
