#include "data/markov_source.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>

#include "compress/splitmix64.h"

namespace cmpi::data {

using compress::splitmix64;

namespace {

double uniform01(std::mt19937_64& rng) {
  return double(rng() >> 11) * 0x1.0p-53;
}

}  // namespace

MarkovSource::MarkovSource(int64_t vocab_size, int64_t branching, double concentration,
                           uint64_t seed)
    : vocab_(vocab_size), branching_(branching), seed_(seed) {
  if (vocab_size < 2) throw std::invalid_argument("markov source: vocab_size must be >= 2");
  if (branching < 1 || branching > vocab_size)
    throw std::invalid_argument("markov source: branching must be in [1, vocab_size], got " +
                                std::to_string(branching));
  if (!(concentration > 0)) throw std::invalid_argument("markov source: concentration must be > 0");

  std::mt19937_64 rng(splitmix64(seed));
  std::gamma_distribution<double> gamma(concentration, 1.0);
  std::vector<int32_t> tokens(vocab_size);
  std::iota(tokens.begin(), tokens.end(), 0);
  successors_.resize(vocab_size * branching);
  cumulative_.resize(vocab_size * branching);
  std::vector<double> probs(branching);
  for (int64_t i = 0; i < vocab_size; ++i) {
    // Partial Fisher-Yates: the first `branching` entries become distinct successors.
    for (int64_t j = 0; j < branching; ++j) {
      std::uniform_int_distribution<int64_t> pick(j, vocab_size - 1);
      std::swap(tokens[j], tokens[pick(rng)]);
      successors_[i * branching + j] = tokens[j];
    }
    double total = 0;
    for (auto& p : probs) total += (p = gamma(rng) + 1e-12);
    double running = 0;
    for (int64_t j = 0; j < branching; ++j) {
      probs[j] /= total;
      running += probs[j];
      cumulative_[i * branching + j] = running;
    }
    cumulative_[i * branching + branching - 1] = 1.0;
  }

  // Stationary distribution by power iteration (lazy chain: always aperiodic).
  std::vector<double> pi(vocab_size, 1.0 / double(vocab_size)), next(vocab_size);
  for (int iter = 0; iter < 10000; ++iter) {
    for (int64_t i = 0; i < vocab_size; ++i) next[i] = 0.5 * pi[i];
    for (int64_t i = 0; i < vocab_size; ++i) {
      double previous = 0;
      for (int64_t j = 0; j < branching; ++j) {
        double p = cumulative_[i * branching + j] - previous;
        previous = cumulative_[i * branching + j];
        next[successors_[i * branching + j]] += 0.5 * pi[i] * p;
      }
    }
    double change = 0;
    for (int64_t i = 0; i < vocab_size; ++i) change += std::abs(next[i] - pi[i]);
    pi.swap(next);
    if (change < 1e-13) break;
  }
  stationary_ = pi;
  stationary_cumulative_.resize(vocab_size);
  std::partial_sum(pi.begin(), pi.end(), stationary_cumulative_.begin());
  stationary_cumulative_.back() = 1.0;

  entropy_rate_ = 0;
  for (int64_t i = 0; i < vocab_size; ++i) {
    double previous = 0, row_entropy = 0;
    for (int64_t j = 0; j < branching; ++j) {
      double p = cumulative_[i * branching + j] - previous;
      previous = cumulative_[i * branching + j];
      if (p > 0) row_entropy -= p * std::log(p);
    }
    entropy_rate_ += pi[i] * row_entropy;
  }
}

int64_t MarkovSource::draw(const double* cumulative, const int32_t* successors, double u) const {
  int64_t j = 0;
  while (j + 1 < branching_ && u >= cumulative[j]) ++j;
  return successors[j];
}

void MarkovSource::sample(uint64_t step, uint64_t index, int64_t* out, int64_t length) const {
  if (length <= 0) return;
  std::mt19937_64 rng(splitmix64(seed_ ^ splitmix64(step * 0x100000001b3ull + index)));
  double u = uniform01(rng);
  auto first = std::upper_bound(stationary_cumulative_.begin(), stationary_cumulative_.end(), u);
  int64_t token = std::min<int64_t>(first - stationary_cumulative_.begin(), vocab_ - 1);
  out[0] = token;
  for (int64_t t = 1; t < length; ++t) {
    token =
        draw(&cumulative_[token * branching_], &successors_[token * branching_], uniform01(rng));
    out[t] = token;
  }
}

}  // namespace cmpi::data
