// TokenGenerator: the decoding loop. From a prompt's token ids it runs the
// model, picks the next token with a TokenSampler from the logits of the
// last position (only the columns [0, vocab_size): a model whose head is
// padded past the vocabulary never yields a padded id), hands it to the
// caller at once (streaming), and feeds it back, until the end-of-document
// id, the token budget, or model.seq_len positions.
//
// With the KV cache (the default) the prompt runs once and every later
// token costs one position's forward (GptImpl::forward_cached); without it
// each step runs the whole sequence again (the reference the cache is
// tested against, and the baseline of its speed-up). The sequence never
// passes model.seq_len positions: a prompt must leave room for one token,
// and generation stops there (Stop::kSeqLen), as the learned position table
// and the rotary angles end there.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "generate/token_sampler.h"
#include "models/gpt.h"

namespace cmpi::generate {

struct GenerationSettings {
  int64_t max_new_tokens = 64;
  int64_t end_of_document = -1;  // stops after this id; -1: none
  bool use_cache = true;
};

enum class Stop { kEndOfDocument, kBudget, kSeqLen };
// "the end-of-document id", "--max-new-tokens", "model.seq_len (the sequence is full)"
const char* describe(Stop stop);

struct Generated {
  std::vector<int64_t> tokens;  // the new ones (the end-of-document id included)
  Stop stop = Stop::kBudget;
};

// Throws std::invalid_argument for an empty prompt, an id outside
// [0, vocab_size), or a prompt of seq_len tokens or more (no room for one
// new token), naming the id and its position or the lengths.
void check_prompt(const std::vector<int64_t>& prompt, int64_t vocab_size, int64_t seq_len);

class TokenGenerator {
 public:
  // `model`: a whole GPT on one rank (tp 1), put in eval mode.
  explicit TokenGenerator(models::Gpt model);

  // Throws std::invalid_argument for a prompt check_prompt refuses.
  Generated run(const std::vector<int64_t>& prompt, const GenerationSettings& settings,
                TokenSampler& sampler, const std::function<void(int64_t)>& on_token = {});

  // The logits [vocab_size] of the position after `prompt` from a plain
  // forward of the whole sequence.
  torch::Tensor next_logits_without_cache(const std::vector<int64_t>& sequence);

  int64_t vocab_size() const { return vocab_size_; }

 private:
  models::Gpt model_;
  int64_t vocab_size_, seq_len_;
};

}  // namespace cmpi::generate
