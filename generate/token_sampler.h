// TokenSampler: the next token from one position's logits. Greedy
// (temperature 0) takes the highest logit. Otherwise the logits are divided
// by the temperature, then top-k keeps the k highest (ties with the k-th
// kept too), top-p keeps the smallest set of the highest whose
// probabilities sum to at least p (nucleus sampling, Holtzman et al. 2019),
// and a token is drawn from the softmax of what is kept, with the sampler's
// own generator: the same seed and logits give the same tokens. Top-k 1
// thus always gives the greedy token.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

namespace cmpi::generate {

struct SamplingOptions {
  double temperature = 0.0;  // 0: greedy
  int64_t top_k = 0;         // 0: all tokens
  double top_p = 1.0;        // 1: all tokens
  uint64_t seed = 0;
};

// Throws std::invalid_argument naming the option (--temperature, --top-k,
// --top-p) for a value outside its range.
void check_sampling_options(const SamplingOptions& options);

// "greedy" or "temperature 0.8, top-k 40, top-p 0.95".
std::string describe(const SamplingOptions& options);

class TokenSampler {
 public:
  explicit TokenSampler(const SamplingOptions& options);
  // logits [vocab] (float32) -> a token id in [0, vocab).
  int64_t next(const torch::Tensor& logits);

 private:
  SamplingOptions options_;
  at::Generator generator_;
};

}  // namespace cmpi::generate
