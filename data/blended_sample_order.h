// Which dataset each global sample of a blend comes from, as GPT-NeoX's and
// Megatron-LM's BlendableDataset decide it: weights are normalised; global
// sample i goes to the dataset whose share lags its weight most, i.e. the one
// maximising weight[d] x max(i, 1) - samples_so_far[d] (ties: the lowest d),
// and is that dataset's next sample. Deterministic and seed-free: every
// prefix of the order is as close to the weights as whole samples allow.
#pragma once

#include <cstdint>
#include <vector>

namespace cmpi::data {

struct BlendedSampleOrder {
  std::vector<int32_t> dataset;         // per global sample: which dataset
  std::vector<int64_t> dataset_sample;  // per global sample: its index in that dataset
  std::vector<int64_t> samples_per_dataset;
};

// Throws std::invalid_argument for no weights, a negative or non-finite one,
// or weights that add up to 0.
BlendedSampleOrder blend_samples(const std::vector<double>& weights, int64_t total_samples);

}  // namespace cmpi::data
