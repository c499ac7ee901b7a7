// MarkovSource: synthetic token streams whose best achievable loss is known.
//
// A fixed random first-order Markov chain over the vocabulary: every token
// has `branching` distinct successors with probabilities drawn from a
// symmetric Dirichlet(concentration) distribution (seeded). Sequences start
// from the chain's stationary distribution, so every next-token prediction
// faces the chain's entropy rate H = sum_i pi_i * H(P_i) (nats): a model that
// learns the transition table reaches a mean cross-entropy of exactly H, and
// no model can do better in expectation. Sequence `index` of step `step` is
// drawn from its own counter-seeded generator, so any split of a global batch
// across ranks sees the same sequences as a single rank.
#pragma once

#include <cstdint>
#include <vector>

namespace cmpi::data {

class MarkovSource {
 public:
  MarkovSource(int64_t vocab_size, int64_t branching, double concentration, uint64_t seed);

  // Writes `length` tokens of sequence (step, index) into out.
  void sample(uint64_t step, uint64_t index, int64_t* out, int64_t length) const;

  double entropy_rate() const { return entropy_rate_; }  // nats per token
  const std::vector<double>& stationary() const { return stationary_; }

 private:
  int64_t draw(const double* cumulative, const int32_t* successors, double u) const;

  int64_t vocab_;
  int64_t branching_;
  uint64_t seed_;
  std::vector<int32_t> successors_;  // [vocab][branching]
  std::vector<double> cumulative_;   // [vocab][branching], last entry 1
  std::vector<double> stationary_;   // [vocab]
  std::vector<double> stationary_cumulative_;
  double entropy_rate_ = 0;
};

}  // namespace cmpi::data
