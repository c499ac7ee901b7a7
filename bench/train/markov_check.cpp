// Reference tokens of the trainer's Markov source, for the bit-exactness check of the Python port
// (bench/train/markov_source.py). Built by bench/train/run_bench.sh with g++ against
// data/markov_source.cpp alone (no LibTorch, no MPI):
//   markov_check VOCAB BRANCHING CONCENTRATION SEED SEQ_LEN STEPS PER_STEP > reference.json
// prints JSON: the entropy rate and sequences (step, index) for step < STEPS, index < PER_STEP.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "data/markov_source.h"

int main(int argc, char** argv) {
  if (argc != 8) {
    std::fprintf(stderr,
                 "usage: markov_check VOCAB BRANCHING CONCENTRATION SEED SEQ_LEN STEPS PER_STEP\n");
    return 2;
  }
  const long long vocab = std::atoll(argv[1]), branching = std::atoll(argv[2]);
  const double concentration = std::atof(argv[3]);
  const unsigned long long seed = std::strtoull(argv[4], nullptr, 10);
  const long long length = std::atoll(argv[5]), steps = std::atoll(argv[6]),
                  per_step = std::atoll(argv[7]);
  cmpi::data::MarkovSource source(vocab, branching, concentration, seed);
  std::printf("{\"vocab_size\":%lld,\"branching\":%lld,\"concentration\":%.17g,\"seed\":%llu,"
              "\"entropy_rate\":%.17g,\"sequences\":[",
              vocab, branching, concentration, seed, source.entropy_rate());
  std::vector<int64_t> tokens(static_cast<size_t>(length));
  bool first = true;
  for (long long s = 0; s < steps; ++s)
    for (long long i = 0; i < per_step; ++i) {
      source.sample(uint64_t(s), uint64_t(i), tokens.data(), length);
      std::printf("%s{\"step\":%lld,\"index\":%lld,\"tokens\":[", first ? "" : ",", s, i);
      for (long long t = 0; t < length; ++t) std::printf(t ? ",%lld" : "%lld", (long long)tokens[t]);
      std::printf("]}");
      first = false;
    }
  std::printf("]}\n");
  return 0;
}
