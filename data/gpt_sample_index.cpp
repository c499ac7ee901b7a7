#include "data/gpt_sample_index.h"

#include <cmath>
#include <stdexcept>

#include "data/indexed_dataset.h"

namespace cmpi::data {
namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Uniform in [0, bound) without modulo bias (rejection of the short tail).
uint64_t bounded(uint64_t& state, uint64_t bound) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
  uint64_t x;
  do x = splitmix64(state);
  while (x >= limit);
  return x % bound;
}

void shuffle(std::vector<int64_t>& values, uint64_t seed) {
  uint64_t state = seed;
  for (size_t i = values.size(); i > 1; --i) std::swap(values[i - 1], values[bounded(state, i)]);
}

// Seeds of the two shuffles of one index, distinct so that they are independent.
constexpr uint64_t kDocumentShuffle = 0x646f63756d656e74ull;
constexpr uint64_t kSampleShuffle = 0x73616d706c657321ull;

}  // namespace

std::vector<SequenceRange> split_documents(size_t documents, const std::vector<double>& ratios) {
  double total = 0;
  for (double r : ratios) {
    if (!(r >= 0) || !std::isfinite(r))
      throw std::invalid_argument("split ratios must be finite and >= 0");
    total += r;
  }
  if (ratios.empty() || !(total > 0))
    throw std::invalid_argument("split ratios must add up to more than 0");
  std::vector<SequenceRange> ranges;
  double cumulative = 0;
  size_t begin = 0;
  for (size_t k = 0; k < ratios.size(); ++k) {
    cumulative += ratios[k] / total;
    size_t end =
        k + 1 == ratios.size() ? documents : size_t(std::llround(cumulative * double(documents)));
    end = std::min(std::max(end, begin), documents);
    ranges.push_back({begin, end});
    begin = end;
  }
  return ranges;
}

SequenceRange sequences_of_documents(const IndexedDataset& dataset, SequenceRange documents) {
  if (documents.size() == 0) return {0, 0};
  return {dataset.document_begin(documents.begin), dataset.document_end(documents.end - 1)};
}

int64_t epochs_needed(uint64_t tokens_per_epoch, int64_t seq_len, int64_t num_samples) {
  if (tokens_per_epoch == 0) throw std::invalid_argument("the split holds no tokens");
  // Samples share one token, so n samples need n x seq_len + 1 tokens.
  const uint64_t tokens = uint64_t(num_samples) * uint64_t(seq_len) + 1;
  return int64_t((tokens + tokens_per_epoch - 1) / tokens_per_epoch);
}

GptSampleIndex build_gpt_sample_index(const std::vector<int64_t>& sequence_lengths,
                                      SequenceRange sequences, int64_t seq_len, int64_t num_samples,
                                      uint64_t seed) {
  if (seq_len < 1 || num_samples < 0)
    throw std::invalid_argument("seq_len must be >= 1 and num_samples >= 0");
  uint64_t tokens_per_epoch = 0;
  for (size_t s = sequences.begin; s < sequences.end; ++s)
    tokens_per_epoch += uint64_t(sequence_lengths[s - sequences.begin]);
  const int64_t epochs = epochs_needed(tokens_per_epoch, seq_len, num_samples);

  GptSampleIndex index;
  index.document_index.reserve(size_t(epochs) * sequences.size());
  for (int64_t e = 0; e < epochs; ++e)
    for (size_t s = sequences.begin; s < sequences.end; ++s)
      index.document_index.push_back(int64_t(s));
  shuffle(index.document_index, seed ^ kDocumentShuffle);

  const auto length_at = [&](size_t position) {
    return sequence_lengths[size_t(index.document_index[position]) - sequences.begin];
  };
  index.sample_index.assign(2 * size_t(num_samples + 1), 0);
  // Sample 0 starts at the first token of the first non-empty sequence.
  size_t position = 0;
  while (length_at(position) == 0) ++position;
  int64_t offset = 0;
  index.sample_index[0] = int64_t(position);
  for (int64_t sample = 1; sample <= num_samples; ++sample) {
    // Walk seq_len tokens on from the previous sample's last token.
    int64_t remaining = seq_len;
    while (true) {
      const int64_t left_in_sequence = length_at(position) - 1 - offset;
      if (remaining <= left_in_sequence) {
        offset += remaining;
        break;
      }
      // Step onto the first token of the next non-empty sequence.
      remaining -= left_in_sequence + 1;
      offset = 0;
      do ++position;
      while (length_at(position) == 0);
      if (remaining == 0) break;
    }
    index.sample_index[2 * size_t(sample)] = int64_t(position);
    index.sample_index[2 * size_t(sample) + 1] = offset;
  }
  index.shuffle_index.resize(size_t(num_samples));
  for (int64_t i = 0; i < num_samples; ++i) index.shuffle_index[size_t(i)] = i;
  shuffle(index.shuffle_index, seed ^ kSampleShuffle);
  return index;
}

std::string check_gpt_sample_index(const GptSampleIndex& index,
                                   const std::vector<int64_t>& sequence_lengths,
                                   SequenceRange sequences, int64_t seq_len, int64_t num_samples) {
  if (index.shuffle_index.size() != size_t(num_samples)) return "shuffle index: wrong length";
  if (index.sample_index.size() != 2 * size_t(num_samples + 1)) return "sample index: wrong length";
  if (sequences.size() == 0 || index.document_index.size() % sequences.size() != 0)
    return "document index: not a whole number of epochs";
  for (int64_t id : index.document_index)
    if (id < int64_t(sequences.begin) || id >= int64_t(sequences.end))
      return "document index: sequence id " + std::to_string(id) + " outside the split";
  const auto length_at = [&](int64_t position) {
    return sequence_lengths[size_t(index.document_index[size_t(position)]) - sequences.begin];
  };
  const int64_t positions = int64_t(index.document_index.size());
  for (int64_t s = 0; s <= num_samples; ++s) {
    const int64_t position = index.sample_index[2 * size_t(s)];
    const int64_t offset = index.sample_index[2 * size_t(s) + 1];
    if (position < 0 || position >= positions || offset < 0 || offset >= length_at(position))
      return "sample index: entry " + std::to_string(s) + " outside the document index";
    if (s == 0) continue;
    const int64_t previous = index.sample_index[2 * size_t(s - 1)];
    const int64_t previous_offset = index.sample_index[2 * size_t(s - 1) + 1];
    if (position < previous || (position == previous && offset <= previous_offset))
      return "sample index: entry " + std::to_string(s) + " goes backwards";
    int64_t tokens = 0;
    for (int64_t p = previous; p <= position && tokens <= seq_len + 1; ++p)
      tokens += (p == position ? offset + 1 : length_at(p)) - (p == previous ? previous_offset : 0);
    if (tokens != seq_len + 1)
      return "sample index: sample " + std::to_string(s - 1) + " is not seq_len + 1 tokens";
  }
  std::vector<bool> seen(size_t(num_samples), false);
  for (int64_t i : index.shuffle_index) {
    if (i < 0 || i >= num_samples || seen[size_t(i)]) return "shuffle index: not a permutation";
    seen[size_t(i)] = true;
  }
  return "";
}

namespace {

template <typename T>
void copy_tokens(const IndexedDataset& dataset, const GptSampleIndex& index, size_t sample,
                 int64_t* out, size_t length) {
  const size_t first = size_t(index.sample_index[2 * sample]);
  const size_t last = size_t(index.sample_index[2 * sample + 2]);
  size_t offset = size_t(index.sample_index[2 * sample + 1]);
  const size_t last_offset = size_t(index.sample_index[2 * sample + 3]);
  size_t written = 0;
  for (size_t p = first; p <= last; ++p) {
    const TokenSpan<T> tokens = dataset.sequence<T>(size_t(index.document_index[p]));
    const size_t end = p == last ? last_offset + 1 : tokens.size();
    for (size_t t = offset; t < end; ++t) {
      if (written == length) throw std::logic_error("GPT sample longer than asked for");
      out[written++] = int64_t(tokens[t]);
    }
    offset = 0;
  }
  if (written != length)
    throw std::logic_error("GPT sample of " + std::to_string(written) + " tokens, asked for " +
                           std::to_string(length));
}

}  // namespace

void copy_gpt_sample(const IndexedDataset& dataset, const GptSampleIndex& index, size_t sample,
                     int64_t* out, size_t length) {
  if (sample >= index.samples()) throw std::out_of_range("GPT sample index out of range");
  if (dataset.dtype() == TokenDtype::kUInt16)
    copy_tokens<uint16_t>(dataset, index, sample, out, length);
  else
    copy_tokens<int32_t>(dataset, index, sample, out, length);
}

}  // namespace cmpi::data
