#include "data/token_source.h"

#include "config/config_loader.h"
#include "data/indexed_token_source.h"
#include "data/markov_source.h"

namespace cmpi::data {
namespace {

// Validation sequences come from the same chain as training ones, under
// batch numbers no training step reaches.
constexpr uint64_t kMarkovValidBatches = uint64_t(1) << 62;

class MarkovTokenSource : public TokenSource {
 public:
  MarkovTokenSource(const config::DataConfig& section, int64_t vocab_size)
      : chain_(vocab_size, section.branching, section.concentration, section.seed) {}

  void sample(Split split, int64_t batch, int64_t position, int64_t* out,
              int64_t length) const override {
    const uint64_t step = split == Split::kTrain ? uint64_t(batch) : kMarkovValidBatches + batch;
    chain_.sample(step, uint64_t(position), out, length);
  }
  double loss_floor() const override { return chain_.entropy_rate(); }

 private:
  MarkovSource chain_;
};

}  // namespace

TokenDemand token_demand(const config::Config& config) {
  TokenDemand demand;
  demand.vocab_size = config.model.vocab_size;
  demand.seq_len = config.model.seq_len;
  demand.global_batch = config.training.global_batch;
  demand.train_batches = config.training.steps;
  demand.valid_batches = config.eval.every > 0 ? config.eval.batches : 0;
  demand.origin = [config](const std::string& key) { return config::origin_of(config, key); };
  return demand;
}

std::shared_ptr<const TokenSource> open_token_source(const config::DataConfig& section,
                                                     const TokenDemand& demand, MPI_Comm comm,
                                                     std::FILE* log) {
  if (section.kind == config::DataKind::kIndexed)
    return open_indexed_token_source(section, demand, comm, log);
  return std::make_shared<MarkovTokenSource>(section, demand.vocab_size);
}

}  // namespace cmpi::data
