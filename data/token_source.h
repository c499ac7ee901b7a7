// TokenSource: where the trainer's sequences come from. A sequence is named
// by its split, its global batch (the step, for training) and its position in
// that global batch, never by the rank that reads it, so every data-parallel
// split of a global batch sees exactly the sequences one rank would.
//
// open_token_source builds the source the config asks for: the synthetic
// Markov chain (data.kind markov) or indexed datasets sampled as GPT-NeoX's
// GPTDataset does (data.kind indexed, indexed_token_source.h).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>

#include "config/config.h"

namespace cmpi::data {

enum class Split { kTrain, kValid };

class TokenSource {
 public:
  virtual ~TokenSource() = default;
  // Writes `length` tokens of sequence `position` of global batch `batch`.
  virtual void sample(Split split, int64_t batch, int64_t position, int64_t* out,
                      int64_t length) const = 0;
  // The lowest loss any model can reach in expectation (nats/token), or 0
  // when unknown (real text).
  virtual double loss_floor() const = 0;
};

// What the run asks of its token data, from outside the data section.
struct TokenDemand {
  int64_t vocab_size = 0;     // model.vocab_size: every token must lie below it
  int64_t seq_len = 0;        // model.seq_len: a sample holds seq_len + 1 tokens
  int64_t global_batch = 0;   // training.global_batch: sequences per batch
  int64_t train_batches = 0;  // training.steps: global batches of the train split
  int64_t valid_batches = 0;  // eval.batches when eval.every > 0, else 0
  // Where a config key was written ("configs/x.yaml:14", "--set ..."), so
  // that data errors name it.
  std::function<std::string(const std::string& key)> origin;
};

// The demand of a whole config: the model, training and eval sections.
TokenDemand token_demand(const config::Config& config);

// Collective over `comm` for data.kind indexed (one rank validates the data
// and builds or loads the sample indices, the others receive them); throws
// ConfigError with the same message on every rank when the data cannot be
// used (a missing file, tokens outside model.vocab_size, a split too small),
// naming the config key and the file. `log` (may be null) gets one line per
// dataset from the comm's rank 0.
std::shared_ptr<const TokenSource> open_token_source(const config::DataConfig& section,
                                                     const TokenDemand& demand, MPI_Comm comm,
                                                     std::FILE* log);

}  // namespace cmpi::data
