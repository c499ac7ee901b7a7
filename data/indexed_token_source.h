// Training and validation sequences from Megatron/GPT-NeoX indexed datasets
// (data.kind indexed), sampled as GPT-NeoX's GPTDataset and BlendableDataset
// do (data/gpt_sample_index.h, data/blended_sample_order.h): each dataset's
// documents are split into train and valid ranges by data.split; each split
// of each dataset gets a sample index of exactly the samples the run draws
// from it (training: steps x global_batch over all datasets, blended by
// data.weights; validation: eval.batches x global_batch, the same held-out
// samples at every evaluation); global sequence g of a split is the blend's
// g-th sample.
//
// Built once per job: rank 0 of the communicator opens the datasets, checks
// every token against model.vocab_size and each split's size against
// model.seq_len, and builds the sample indices or reads them from their cache
// files (gpt_sample_index_cache.h); it broadcasts either an error (every rank
// then throws the same ConfigError) or the serialized indices, which the
// other ranks check and use with their own mappings of the datasets.
#pragma once

#include <mpi.h>

#include <cstdio>
#include <memory>

#include "config/config.h"
#include "data/token_source.h"

namespace cmpi::data {

std::shared_ptr<const TokenSource> open_indexed_token_source(const config::DataConfig& section,
                                                             const TokenDemand& demand,
                                                             MPI_Comm comm, std::FILE* log);

}  // namespace cmpi::data
