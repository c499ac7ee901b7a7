// The crossovers a group's BlockSparseCalibration measured, as words a
// checkpoint can keep (checkpoint/rank_state.h: comm/<group>/
// block_sparse_crossovers). They are decisions taken by timing: timings
// differ from run to run, and the block-sparse and the dense route sum the
// ranks' blocks in different orders, so a resumed run must take the routes
// the saving run took. It restores these instead of measuring again.
// Per entry three words: the route pair, the size class (floor(log2 n)) and
// the crossover's bits.
#pragma once

#include <cstdint>
#include <vector>

#include "comm/block_sparse_calibration.h"

namespace cmpi::comm {

std::vector<uint64_t> crossover_words(const BlockSparseCalibration& calibration);

// Puts saved crossovers into `calibration` (as if measured); throws
// std::invalid_argument for words that are not whole, valid entries.
void restore_crossover_words(BlockSparseCalibration& calibration,
                             const std::vector<uint64_t>& words);

}  // namespace cmpi::comm
