#include "generate/token_generator.h"

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace cmpi::generate {
namespace {

torch::Tensor as_batch_of_one(const std::vector<int64_t>& ids) {
  return torch::tensor(ids, torch::kLong).unsqueeze(0);
}

}  // namespace

const char* describe(Stop stop) {
  switch (stop) {
    case Stop::kEndOfDocument:
      return "the end-of-document id";
    case Stop::kBudget:
      return "--max-new-tokens";
    case Stop::kSeqLen:
      return "model.seq_len (the sequence is full)";
  }
  return "?";
}

TokenGenerator::TokenGenerator(models::Gpt model)
    : model_(std::move(model)),
      vocab_size_(model_->options().vocab_size),
      seq_len_(model_->options().seq_len) {
  model_->eval();
}

void check_prompt(const std::vector<int64_t>& prompt, int64_t vocab_size, int64_t seq_len) {
  if (prompt.empty()) throw std::invalid_argument("the prompt has no tokens");
  for (size_t i = 0; i < prompt.size(); ++i)
    if (prompt[i] < 0 || prompt[i] >= vocab_size)
      throw std::invalid_argument("token id " + std::to_string(prompt[i]) + " (prompt position " +
                                  std::to_string(i) + ") is outside the vocabulary [0, " +
                                  std::to_string(vocab_size) + ")");
  if (int64_t(prompt.size()) >= seq_len)
    throw std::invalid_argument("the prompt has " + std::to_string(prompt.size()) +
                                " tokens; model.seq_len " + std::to_string(seq_len) +
                                " leaves no room for a new one");
}

torch::Tensor TokenGenerator::next_logits_without_cache(const std::vector<int64_t>& sequence) {
  torch::NoGradGuard no_grad;
  const auto logits = model_->forward(as_batch_of_one(sequence));
  return logits[0][int64_t(sequence.size()) - 1].narrow(0, 0, vocab_size_);
}

Generated TokenGenerator::run(const std::vector<int64_t>& prompt,
                              const GenerationSettings& settings, TokenSampler& sampler,
                              const std::function<void(int64_t)>& on_token) {
  check_prompt(prompt, vocab_size_, seq_len_);
  torch::NoGradGuard no_grad;
  Generated out;
  std::vector<int64_t> sequence = prompt;
  std::optional<models::KvCache> cache;
  torch::Tensor logits;  // [vocab_size] of the next position
  if (settings.use_cache) {
    cache.emplace(model_->make_kv_cache(1));
    const auto all = model_->forward_cached(as_batch_of_one(prompt), *cache);
    logits = all[0][int64_t(prompt.size()) - 1].narrow(0, 0, vocab_size_);
  } else {
    logits = next_logits_without_cache(sequence);
  }
  if (settings.max_new_tokens <= 0) return out;
  while (true) {
    const int64_t token = sampler.next(logits);
    out.tokens.push_back(token);
    sequence.push_back(token);
    if (on_token) on_token(token);
    if (token == settings.end_of_document) {
      out.stop = Stop::kEndOfDocument;
      break;
    }
    if (int64_t(sequence.size()) >= seq_len_) {
      out.stop = Stop::kSeqLen;
      break;
    }
    if (int64_t(out.tokens.size()) >= settings.max_new_tokens) {
      out.stop = Stop::kBudget;
      break;
    }
    if (cache)
      logits =
          model_->forward_cached(as_batch_of_one({token}), *cache)[0][0].narrow(0, 0, vocab_size_);
    else
      logits = next_logits_without_cache(sequence);
  }
  return out;
}

}  // namespace cmpi::generate
