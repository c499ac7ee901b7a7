// The on-disk cache of a GptSampleIndex, so that a job builds each index once
// and later jobs with the same inputs only read it. The file is keyed by a
// text naming everything the index depends on: a digest of the .idx bytes
// (sequence lengths and document boundaries), the .bin size, the split's name
// and document range, seq_len, the number of samples and the seed; its name
// carries a 64-bit hash of that text and the file holds the text itself, so a
// hash collision or a stale file is never mistaken for the right index.
//
// Layout (little-endian): magic "CMPIGSI1", u64 key length, key bytes, three
// u64 array lengths (document, sample, shuffle index), the int64 arrays, and a
// u64 FNV-1a digest of everything before it (a truncated or corrupted file is
// detected). Written to a temporary name and renamed, every write checked.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "data/gpt_sample_index.h"

namespace cmpi::data {

class IndexedDataset;

struct GptSampleIndexSpec {
  std::string split_name;   // "train", "valid": part of the key and the file name
  SequenceRange documents;  // the split's documents
  int64_t seq_len = 0;
  int64_t num_samples = 0;
  uint64_t seed = 0;
};

// The key text of `spec` over `dataset` (reads the whole .idx once).
std::string gpt_sample_index_key(const IndexedDataset& dataset, const GptSampleIndexSpec& spec);

// Where the index of `spec` is cached: `cache_dir` (empty: the dataset's own
// directory) / <dataset file name>.<split>.<16 hex digits of the key hash>.samples
std::string gpt_sample_index_cache_path(const std::string& dataset_prefix,
                                        const std::string& cache_dir,
                                        const GptSampleIndexSpec& spec, const std::string& key);

std::vector<uint8_t> serialize_gpt_sample_index(const GptSampleIndex& index,
                                                const std::string& key);

// Parses and checks (check_gpt_sample_index) a serialized index; throws
// DatasetError naming `source` and the field for anything wrong.
GptSampleIndex parse_gpt_sample_index(const std::vector<uint8_t>& bytes, const std::string& key,
                                      const IndexedDataset& dataset, const GptSampleIndexSpec& spec,
                                      const std::string& source);

struct CachedGptSampleIndex {
  GptSampleIndex index;
  std::vector<uint8_t> bytes;  // serialized, as in the cache file
  std::string path;            // the cache file
  bool loaded = false;         // read from the cache (false: built and written)
};

// Reads the cached index if a valid one exists, else builds it and writes the
// cache (a cache file that fails its checks is reported on `log` and
// replaced). Call it on one process per job.
CachedGptSampleIndex load_or_build_gpt_sample_index(const IndexedDataset& dataset,
                                                    const std::string& dataset_prefix,
                                                    const std::string& cache_dir,
                                                    const GptSampleIndexSpec& spec,
                                                    std::ostream* log);

// Token counts of sequences [range.begin, range.end).
std::vector<int64_t> sequence_lengths(const IndexedDataset& dataset, SequenceRange range);

}  // namespace cmpi::data
