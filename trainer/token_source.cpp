#include "trainer/token_source.h"

#include "trainer/indexed_token_source.h"
#include "trainer/markov_source.h"

namespace cmpi::trainer {
namespace {

// Validation sequences come from the same chain as training ones, under
// batch numbers no training step reaches.
constexpr uint64_t kMarkovValidBatches = uint64_t(1) << 62;

class MarkovTokenSource : public TokenSource {
 public:
  explicit MarkovTokenSource(const Config& c)
      : chain_(c.model.vocab_size, c.data.branching, c.data.concentration, c.data.seed) {}

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

std::shared_ptr<const TokenSource> open_token_source(const Config& config, MPI_Comm comm,
                                                     std::FILE* log) {
  if (config.data.kind == "indexed") return open_indexed_token_source(config, comm, log);
  return std::make_shared<MarkovTokenSource>(config);
}

}  // namespace cmpi::trainer
