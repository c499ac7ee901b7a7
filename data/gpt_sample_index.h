// The sample index of GPT-NeoX's / Megatron-LM's GPTDataset, built from one
// split of an indexed dataset. How it works:
//  - split: the dataset's documents are cut into consecutive ranges by the
//    split ratios (train first, then valid), so no document is in two splits;
//    a document range is the range of sequences its documents hold.
//  - document index: the split's sequence ids, repeated for as many epochs as
//    `num_samples` samples of seq_len + 1 tokens need, then shuffled (one
//    Fisher-Yates pass over all epochs, as GPT-NeoX does).
//  - sample index: num_samples + 1 (position in the document index, token
//    offset) pairs; sample i runs from entry i to entry i + 1 inclusive, so
//    every sample is seq_len + 1 tokens that may span sequences, and
//    consecutive samples share one token (the last target of one is the first
//    input of the next).
//  - shuffle index: a permutation of the samples (seeded), so that global
//    sample g is sample shuffle[g].
// The shuffles use their own SplitMix64 generator and unbiased bounded draws,
// so an index is the same on every platform and standard library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cmpi::data {

class IndexedDataset;

struct SequenceRange {
  size_t begin = 0;  // first sequence
  size_t end = 0;    // one past the last
  size_t size() const { return end - begin; }
};

// Cuts `documents` documents into one range per ratio (ratios >= 0, sum > 0,
// normalised here), by Megatron's rule: boundary k = round(documents x the sum
// of the first k normalised ratios), the last boundary = documents. Returns
// document ranges.
std::vector<SequenceRange> split_documents(size_t documents, const std::vector<double>& ratios);

// The sequences held by documents [range.begin, range.end) of `dataset`.
SequenceRange sequences_of_documents(const IndexedDataset& dataset, SequenceRange documents);

struct GptSampleIndex {
  std::vector<int64_t> document_index;  // sequence ids, every epoch, shuffled
  std::vector<int64_t> sample_index;    // 2 x (num_samples + 1): position, offset
  std::vector<int64_t> shuffle_index;   // num_samples: a permutation of [0, num_samples)
  size_t samples() const { return shuffle_index.size(); }
};

// Builds the index over sequences `sequences` whose token counts are
// `sequence_lengths[s - sequences.begin]`. Throws std::invalid_argument when
// the range holds no tokens.
GptSampleIndex build_gpt_sample_index(const std::vector<int64_t>& sequence_lengths,
                                      SequenceRange sequences, int64_t seq_len, int64_t num_samples,
                                      uint64_t seed);

// Epochs the index needs: the fewest whose tokens give num_samples samples.
int64_t epochs_needed(uint64_t tokens_per_epoch, int64_t seq_len, int64_t num_samples);

// Checks that `index` could have been built over `sequence_lengths` /
// `sequences` with these sizes (every id, position and offset inside its
// bounds, every sample exactly seq_len + 1 tokens, the shuffle a
// permutation); returns what is wrong, or "" if nothing.
std::string check_gpt_sample_index(const GptSampleIndex& index,
                                   const std::vector<int64_t>& sequence_lengths,
                                   SequenceRange sequences, int64_t seq_len, int64_t num_samples);

// Writes sample `sample` (before shuffling) of `index` over `dataset`: seq_len
// + 1 tokens into `out`.
void copy_gpt_sample(const IndexedDataset& dataset, const GptSampleIndex& index, size_t sample,
                     int64_t* out, size_t length);

}  // namespace cmpi::data
