// The split search of an mpc chunk's plan (mpc_chunk_plan.cpp describes the
// choice): given, per bit plane, the sample's nonzero words and bytes with
// and without the stage-3 difference from the plane below, the stage-4
// ranges [0, a) whole, [a, b) per byte, [b, 32) per word and the stage-3
// start c of the smallest estimated size. Costs per plane and block: whole
// 32 bits; per byte 4 mask bits + 8 per nonzero byte; per word 1 bitmap bit
// + 32 if nonzero. CMPI_HD: the CPU encoder (choose_mpc_plan) and the device
// coder (compress/cuda/mpc_plan_search.h) run this one search, so their
// plans, and with them the chunks' bytes, agree.
#pragma once

#include <cstdint>

#include "compress/host_device.h"
#include "compress/mpc_chunk_plan.h"

namespace cmpi::compress {

constexpr int64_t kMpcNoEstimate = INT64_MAX;

// Counts over a chunk's sampled blocks, per bit plane.
struct MpcPlanStats {
  // [0: as transposed and oriented, 1: minus the plane below][plane]
  uint32_t nonzero_words[2][32] = {};
  uint32_t nonzero_bytes[2][32] = {};
  uint32_t blocks = 0;
};

// A plan and its estimated size in bits (kMpcNoEstimate: none yet).
struct MpcPlanEstimate {
  MpcChunkPlan plan;
  int64_t bits;
};

// The best stage-3/stage-4 split for the planes described by `stats`: for
// fixed (a, b) the best c minimises the suffix sum of the planes' cost change
// when lagged, so running minima over c make the search O(33 *
// kMaxBytePlanes), not O(33^3).
CMPI_HD inline MpcPlanEstimate mpc_best_split(const MpcPlanStats& stats, unsigned stride,
                                              uint32_t reference) {
  const int64_t blocks = stats.blocks;
  int64_t byte_prefix[33], word_prefix[33], byte_lag_suffix[33], word_lag_suffix[33];
  byte_prefix[0] = word_prefix[0] = 0;
  for (unsigned j = 0; j < 32; ++j) {
    byte_prefix[j + 1] = byte_prefix[j] + 4 * blocks + 8 * int64_t(stats.nonzero_bytes[0][j]);
    word_prefix[j + 1] = word_prefix[j] + blocks + 32 * int64_t(stats.nonzero_words[0][j]);
  }
  byte_lag_suffix[32] = word_lag_suffix[32] = 0;
  for (unsigned j = 32; j-- > 0;) {
    byte_lag_suffix[j] = byte_lag_suffix[j + 1] +
                         8 * (int64_t(stats.nonzero_bytes[1][j]) - stats.nonzero_bytes[0][j]);
    word_lag_suffix[j] = word_lag_suffix[j + 1] +
                         32 * (int64_t(stats.nonzero_words[1][j]) - stats.nonzero_words[0][j]);
  }
  int64_t word_lag_min[33];
  unsigned word_lag_arg[33];
  word_lag_min[32] = 0;
  word_lag_arg[32] = 32;
  for (unsigned c = 32; c-- > 1;) {
    const bool better = word_lag_suffix[c] <= word_lag_min[c + 1];
    word_lag_min[c] = better ? word_lag_suffix[c] : word_lag_min[c + 1];
    word_lag_arg[c] = better ? c : word_lag_arg[c + 1];
  }
  word_lag_min[0] = word_lag_min[1];
  word_lag_arg[0] = word_lag_arg[1];

  MpcPlanEstimate best{MpcChunkPlan{}, kMpcNoEstimate};
  for (unsigned b = 0; b <= 32; ++b) {
    int64_t byte_lag_min = kMpcNoEstimate;
    unsigned byte_lag_arg = 0;
    const unsigned a_min = b > kMaxBytePlanes ? b - kMaxBytePlanes : 0;
    for (unsigned a = b + 1; a-- > a_min;) {
      if (a >= 1 && a < b && byte_lag_suffix[a] < byte_lag_min) {
        byte_lag_min = byte_lag_suffix[a];
        byte_lag_arg = a;
      }
      int64_t lag = word_lag_min[b];
      unsigned first_lagged = word_lag_arg[b];
      if (byte_lag_min != kMpcNoEstimate) {
        const int64_t through_bytes = byte_lag_min - byte_lag_suffix[b] + word_lag_suffix[b];
        if (through_bytes < lag) {
          lag = through_bytes;
          first_lagged = byte_lag_arg;
        }
      }
      const int64_t bits = 32 * blocks * a + (byte_prefix[b] - byte_prefix[a]) +
                           (word_prefix[32] - word_prefix[b]) + lag;
      if (bits < best.bits) {
        best.bits = bits;
        best.plan.stride = stride;
        best.plan.reference = reference;
        best.plan.first_lagged = first_lagged;
        best.plan.first_byte_plane = a;
        best.plan.first_word_plane = b;
      }
    }
  }
  return best;
}

}  // namespace cmpi::compress
