#include "data/indexed_token_source.h"

#include <algorithm>
#include <climits>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "config/config.h"
#include "config/config_loader.h"
#include "data/blended_sample_order.h"
#include "data/gpt_sample_index.h"
#include "data/gpt_sample_index_cache.h"
#include "data/indexed_dataset.h"

namespace cmpi::data {
namespace {

constexpr const char* kSplitNames[2] = {"train", "valid"};

struct SplitIndex {
  BlendedSampleOrder order;
  std::vector<GptSampleIndexSpec> specs;  // per dataset
  std::vector<GptSampleIndex> indices;    // per dataset (empty: no samples)
};

class IndexedTokenSource : public TokenSource {
 public:
  IndexedTokenSource(std::vector<std::unique_ptr<IndexedDataset>> datasets, SplitIndex splits[2],
                     int64_t global_batch)
      : datasets_(std::move(datasets)), global_batch_(global_batch) {
    splits_[0] = std::move(splits[0]);
    splits_[1] = std::move(splits[1]);
  }

  void sample(Split split, int64_t batch, int64_t position, int64_t* out,
              int64_t length) const override {
    const SplitIndex& s = splits_[split == Split::kTrain ? 0 : 1];
    const int64_t global = batch * global_batch_ + position;
    if (global < 0 || size_t(global) >= s.order.dataset.size())
      throw std::out_of_range(std::string(kSplitNames[split == Split::kTrain ? 0 : 1]) +
                              " sample " + std::to_string(global) + " was not indexed (" +
                              std::to_string(s.order.dataset.size()) + " samples)");
    const size_t d = size_t(s.order.dataset[size_t(global)]);
    const GptSampleIndex& index = s.indices[d];
    const int64_t sample = index.shuffle_index[size_t(s.order.dataset_sample[size_t(global)])];
    copy_gpt_sample(*datasets_[d], index, size_t(sample), out, size_t(length));
  }
  double loss_floor() const override { return 0; }

 private:
  std::vector<std::unique_ptr<IndexedDataset>> datasets_;
  SplitIndex splits_[2];
  int64_t global_batch_;
};

std::string path_key(size_t i) {
  return "data.paths[" + std::to_string(i) + "]";
}

// "<where data.paths was written>: data.paths[i]: why"
[[noreturn]] void fail_path(const TokenDemand& demand, size_t i, const std::string& why) {
  throw config::ConfigError(demand.origin("data.paths") + ": " + path_key(i) + ": " + why);
}

std::vector<std::unique_ptr<IndexedDataset>> open_datasets(const config::DataConfig& section,
                                                           const TokenDemand& demand) {
  std::vector<std::unique_ptr<IndexedDataset>> datasets;
  for (size_t i = 0; i < section.paths.size(); ++i) {
    try {
      datasets.push_back(std::make_unique<IndexedDataset>(section.paths[i]));
    } catch (const std::exception& e) {
      fail_path(demand, i, e.what());
    }
  }
  return datasets;
}

// What each split draws from each dataset; the cache key parts of each index.
void plan_splits(const config::DataConfig& section, const TokenDemand& demand,
                 const std::vector<std::unique_ptr<IndexedDataset>>& sets, SplitIndex splits[2]) {
  const int64_t samples[2] = {demand.train_batches * demand.global_batch,
                              demand.valid_batches * demand.global_batch};
  const std::vector<double> weights =
      section.weights.empty() ? std::vector<double>(sets.size(), 1.0) : section.weights;
  for (int k = 0; k < 2; ++k) {
    splits[k].order = blend_samples(weights, samples[k]);
    for (size_t d = 0; d < sets.size(); ++d) {
      GptSampleIndexSpec spec;
      spec.split_name = kSplitNames[k];
      spec.documents = split_documents(sets[d]->documents(), section.split)[size_t(k)];
      spec.seq_len = demand.seq_len;
      spec.num_samples = splits[k].order.samples_per_dataset[d];
      // One stream per dataset and split: blending a dataset with others
      // does not reorder its own samples.
      spec.seed = section.seed * 1000003 + d * 2 + uint64_t(k);
      splits[k].specs.push_back(spec);
    }
    splits[k].indices.resize(sets.size());
  }
}

// Rank 0's part: every check, then the indices built or loaded. Returns the
// serialized indices in (split, dataset) order.
std::vector<std::vector<uint8_t>> build_on_root(
    const config::DataConfig& section, const TokenDemand& demand,
    const std::vector<std::unique_ptr<IndexedDataset>>& sets, SplitIndex splits[2],
    std::FILE* log) {
  for (size_t d = 0; d < sets.size(); ++d) {
    const IndexedDataset& set = *sets[d];
    if (set.documents() == 0) fail_path(demand, d, set.idx_path() + " holds no documents");
    try {
      set.validate_tokens(uint64_t(demand.vocab_size));
    } catch (const DatasetError& e) {
      fail_path(demand, d,
                std::string(e.what()) + " (the model's vocabulary is model.vocab_size = " +
                    std::to_string(demand.vocab_size) + ", " + demand.origin("model.vocab_size") +
                    "; the byte tokenizer needs 257, GPT-2's 50257)");
    }
  }
  std::vector<std::vector<uint8_t>> serialized;
  for (int k = 0; k < 2; ++k) {
    for (size_t d = 0; d < sets.size(); ++d) {
      const GptSampleIndexSpec& spec = splits[k].specs[d];
      if (spec.num_samples == 0) {
        serialized.emplace_back();
        continue;
      }
      const SequenceRange sequences = sequences_of_documents(*sets[d], spec.documents);
      uint64_t tokens = 0;
      for (size_t s = sequences.begin; s < sequences.end; ++s)
        tokens += sets[d]->sequence_length(s);
      if (tokens < uint64_t(demand.seq_len) + 1)
        throw config::ConfigError(
            demand.origin("data.split") + ": data.split: the " + kSplitNames[k] + " split of " +
            path_key(d) + " (" + section.paths[d] + ") is " +
            std::to_string(spec.documents.size()) + " of " + std::to_string(sets[d]->documents()) +
            " documents with " + std::to_string(tokens) +
            " tokens, fewer than model.seq_len + 1 = " + std::to_string(demand.seq_len + 1) +
            "; hold out more documents or shorten seq_len");
      std::ostringstream warnings;
      auto cached = load_or_build_gpt_sample_index(*sets[d], section.paths[d], section.cache_dir,
                                                   spec, &warnings);
      if (log) {
        std::fputs(warnings.str().c_str(), stderr);
        std::fprintf(log,
                     "data: %s %s: documents [%zu, %zu) of %zu, %llu tokens, %lld samples of "
                     "%lld tokens, index %s %s\n",
                     section.paths[d].c_str(), kSplitNames[k], spec.documents.begin,
                     spec.documents.end, sets[d]->documents(), (unsigned long long)tokens,
                     (long long)spec.num_samples, (long long)(demand.seq_len + 1),
                     cached.loaded ? "read from" : "built into", cached.path.c_str());
      }
      splits[k].indices[d] = std::move(cached.index);
      serialized.push_back(std::move(cached.bytes));
    }
  }
  return serialized;
}

void broadcast_bytes(std::vector<uint8_t>& bytes, MPI_Comm comm) {
  unsigned long long size = bytes.size();
  MPI_Bcast(&size, 1, MPI_UNSIGNED_LONG_LONG, 0, comm);
  bytes.resize(size_t(size));
  for (size_t at = 0; at < bytes.size(); at += INT_MAX / 2) {
    const int count = int(std::min<size_t>(INT_MAX / 2, bytes.size() - at));
    MPI_Bcast(bytes.data() + at, count, MPI_BYTE, 0, comm);
  }
}

std::vector<uint8_t> to_bytes(const std::string& text) {
  return {text.begin(), text.end()};
}

}  // namespace

std::shared_ptr<const TokenSource> open_indexed_token_source(const config::DataConfig& section,
                                                             const TokenDemand& demand,
                                                             MPI_Comm comm, std::FILE* log) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::vector<std::unique_ptr<IndexedDataset>> sets;
  SplitIndex splits[2];
  std::vector<std::vector<uint8_t>> serialized;
  std::vector<uint8_t> error;
  if (rank == 0) {
    try {
      sets = open_datasets(section, demand);
      plan_splits(section, demand, sets, splits);
      serialized = build_on_root(section, demand, sets, splits, log);
    } catch (const std::exception& e) {
      error = to_bytes(e.what());
    }
  }
  // No rank may leave before it knows whether rank 0 failed.
  broadcast_bytes(error, comm);
  if (!error.empty()) throw config::ConfigError(std::string(error.begin(), error.end()));
  // A rank that fails here still takes part in every broadcast below, so
  // that rank 0 is never left waiting; it throws at the end.
  std::string local_error;
  if (rank != 0) {
    try {
      sets = open_datasets(section, demand);
      plan_splits(section, demand, sets, splits);
    } catch (const std::exception& e) {
      local_error = e.what();
    }
  }
  size_t next = 0;
  for (int k = 0; k < 2; ++k) {
    for (size_t d = 0; d < section.paths.size(); ++d, ++next) {
      std::vector<uint8_t> bytes = rank == 0 ? std::move(serialized[next]) : std::vector<uint8_t>();
      broadcast_bytes(bytes, comm);
      if (rank == 0 || !local_error.empty() || splits[k].specs[d].num_samples == 0) continue;
      try {
        const std::string key = gpt_sample_index_key(*sets[d], splits[k].specs[d]);
        splits[k].indices[d] = parse_gpt_sample_index(bytes, key, *sets[d], splits[k].specs[d],
                                                      "the sample index from rank 0");
      } catch (const std::exception& e) {
        local_error = e.what();
      }
    }
  }
  if (!local_error.empty())
    throw std::runtime_error("rank " + std::to_string(rank) + ": " + local_error);
  return std::make_shared<IndexedTokenSource>(std::move(sets), splits, demand.global_batch);
}

}  // namespace cmpi::data
