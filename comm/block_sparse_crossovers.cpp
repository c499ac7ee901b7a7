#include "comm/block_sparse_crossovers.h"

#include <cstring>
#include <stdexcept>
#include <string>

namespace cmpi::comm {

std::vector<uint64_t> crossover_words(const BlockSparseCalibration& calibration) {
  std::vector<uint64_t> words;
  for (const auto& [key, crossover] : calibration.measured()) {
    uint64_t bits = 0;
    std::memcpy(&bits, &crossover, sizeof bits);
    words.insert(words.end(), {key.first, uint64_t(key.second), bits});
  }
  return words;
}

void restore_crossover_words(BlockSparseCalibration& calibration,
                             const std::vector<uint64_t>& words) {
  if (words.size() % 3 != 0)
    throw std::invalid_argument(std::to_string(words.size()) +
                                " words, not whole (route pair, size class, crossover) entries");
  for (size_t i = 0; i < words.size(); i += 3) {
    double crossover = 0;
    std::memcpy(&crossover, &words[i + 2], sizeof crossover);
    if (words[i + 1] > 63 || !(crossover >= 0))
      throw std::invalid_argument("entry " + std::to_string(i / 3) + " has size class " +
                                  std::to_string(words[i + 1]) + " and crossover " +
                                  std::to_string(crossover));
    // Any n of the size class names it.
    calibration.set(words[i], size_t(1) << words[i + 1], crossover);
  }
}

}  // namespace cmpi::comm
