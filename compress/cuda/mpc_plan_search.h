// The choice of an mpc chunk's plan (compress/mpc_chunk_plan.cpp describes
// it) as CMPI_HD code for one device thread per chunk: the same sample of up
// to 64 blocks, the same majority reference and plane statistics, and the
// same split search, so the plan, and with it the chunk's bytes, equal the
// CPU encoder's (choose_mpc_plan; the CPU tests compare them).
//
// Where the CPU keeps the transposed sample (8 KiB), this code makes two
// passes over the sampled blocks and recomputes stage 1 and the
// transposition in the second, so a thread needs only a few 32-word arrays.
#pragma once

#include <cstdint>

#include "compress/cuda/mpc_block_steps.h"
#include "compress/host_device.h"
#include "compress/mpc_chunk_plan.h"
#include "compress/mpc_split_search.h"

namespace cmpi::compress::cuda {

constexpr uint64_t kMpcSampleBlocks = 64;

CMPI_HD inline uint32_t mpc_nonzero_bytes_of(uint32_t x) {
  return uint32_t((x & 0xFFu) != 0) + uint32_t((x & 0xFF00u) != 0) +
         uint32_t((x & 0xFF0000u) != 0) + uint32_t((x & 0xFF000000u) != 0);
}

// Sampled block s of a chunk of `words` words: the CPU's choice, step / 2 +
// s * step with step = ceil(blocks / 64).
struct MpcSample {
  uint64_t first, step, count;
};

CMPI_HD inline MpcSample mpc_sample_of(uint64_t words) {
  const uint64_t nblocks = (words + 31) / 32;
  MpcSample sample;
  sample.step = (nblocks + kMpcSampleBlocks - 1) / kMpcSampleBlocks;
  sample.first = sample.step / 2;
  sample.count = sample.first < nblocks ? (nblocks - sample.first - 1) / sample.step + 1 : 0;
  return sample;
}

// The estimate of one stage-1 stride over the chunk's sample.
CMPI_HD inline MpcPlanEstimate mpc_estimate_stride(const float* w, uint64_t words,
                                                   unsigned stride) {
  const MpcSample sample = mpc_sample_of(words);
  uint32_t planes[32];
  // Pass 1: the ones per plane, for the majority reference.
  uint32_t ones[32] = {};
  uint32_t values = 0;
  for (uint64_t s = 0; s < sample.count; ++s) {
    const uint32_t valid =
        mpc_difference_block(w, words, sample.first + s * sample.step, stride, 0, planes);
    mpc_transpose_block(planes);
    values += uint32_t(hd::popcount32(valid));
    for (unsigned j = 0; j < 32; ++j) ones[j] += uint32_t(hd::popcount32(planes[j]));
  }
  uint32_t reference = 0;
  for (unsigned j = 0; j < 32; ++j)
    if (2 * ones[j] > values) reference |= 1u << j;

  // Pass 2: zero words and bytes per plane, as oriented and lagged. The
  // reference flips only the lanes that hold values (padding stays zero).
  MpcPlanStats stats = {};
  stats.blocks = uint32_t(sample.count);
  for (uint64_t s = 0; s < sample.count; ++s) {
    const uint32_t valid =
        mpc_difference_block(w, words, sample.first + s * sample.step, stride, 0, planes);
    mpc_transpose_block(planes);
    uint32_t below = 0;
    for (unsigned j = 0; j < 32; ++j) {
      const uint32_t oriented = planes[j] ^ (((reference >> j) & 1u) ? valid : 0u);
      const uint32_t lagged = oriented - below;
      below = oriented;
      stats.nonzero_words[0][j] += oriented != 0;
      stats.nonzero_words[1][j] += lagged != 0;
      stats.nonzero_bytes[0][j] += mpc_nonzero_bytes_of(oriented);
      stats.nonzero_bytes[1][j] += mpc_nonzero_bytes_of(lagged);
    }
  }
  return mpc_best_split(stats, stride, reference);
}

// choose_mpc_plan: among the strides {dim, 0} (dim 1..32) or {1, 2, 4, 8,
// 16, 32, 0} (dim 0: auto), the first with the smallest estimate.
CMPI_HD inline MpcChunkPlan mpc_choose_plan(const float* w, uint64_t words, unsigned dim) {
  const unsigned auto_strides[7] = {1, 2, 4, 8, 16, 32, 0};
  const unsigned fixed[2] = {dim, 0};
  const unsigned* strides = dim == 0 ? auto_strides : fixed;
  const unsigned count = dim == 0 ? 7 : 2;
  MpcPlanEstimate best{MpcChunkPlan{}, kMpcNoEstimate};
  for (unsigned i = 0; i < count; ++i) {
    const MpcPlanEstimate e = mpc_estimate_stride(w, words, strides[i]);
    if (e.bits < best.bits) best = e;
  }
  return best.plan;
}

// mpc_plan_problem as a yes/no for the device decoder.
CMPI_HD inline bool mpc_plan_is_valid(const MpcChunkPlan& plan) {
  return plan.stride <= 32 && plan.first_lagged >= 1 && plan.first_lagged <= 32 &&
         plan.first_word_plane <= 32 && plan.first_byte_plane <= plan.first_word_plane &&
         plan.first_word_plane - plan.first_byte_plane <= kMaxBytePlanes;
}

}  // namespace cmpi::compress::cuda
