#include "trainer/compute_probe.h"

#include <mpi.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>

#include "comm/clock.h"
#include "models/family/gpt_family.h"
#include "models/gpt.h"
#include "parallel/mesh/process_groups.h"
#include "plan/step_plan.h"

namespace cmpi::trainer {
namespace {

// Caps that keep one probe run near 20 GFLOP (a few tenths of a second on a
// CPU core): hidden 512, vocab 4096, 512 tokens.
constexpr int64_t kMaxHidden = 512, kMaxVocab = 4096, kMaxSeq = 512, kMaxTokens = 512;

}  // namespace

ComputeProbe probe_compute(const config::Config& config) {
  config::Config c = config;
  c.model.layers = 1;
  c.model.dropout = 0;
  ComputeProbe probe;
  if (c.model.hidden > kMaxHidden) {
    const int64_t head_size = c.model.hidden / c.model.heads;
    c.model.heads = std::max<int64_t>(1, kMaxHidden / head_size);
    c.model.hidden = c.model.heads * head_size;
    probe.shrunk = true;
  }
  if (c.model.vocab_size > kMaxVocab) c.model.vocab_size = kMaxVocab, probe.shrunk = true;
  if (c.model.seq_len > kMaxSeq) c.model.seq_len = kMaxSeq, probe.shrunk = true;
  int64_t batch = c.training.micro_batch;
  if (batch * c.model.seq_len > kMaxTokens) {
    batch = std::max<int64_t>(1, kMaxTokens / c.model.seq_len);
    probe.shrunk = true;
  }
  char shape[160];
  std::snprintf(shape, sizeof shape, "hidden %lld, seq %lld, micro-batch %lld, vocab %lld",
                (long long)c.model.hidden, (long long)c.model.seq_len, (long long)batch,
                (long long)c.model.vocab_size);
  probe.shape = shape;

  at::set_num_threads(int(std::max<int64_t>(1, c.training.threads)));
  torch::manual_seed(1);
  parallel::ProcessGroups groups(MPI_COMM_SELF, parallel::ParallelDims{});
  models::Gpt model(models::gpt_options(c.model), groups);
  const auto tokens = torch::randint(c.model.vocab_size, {batch, c.model.seq_len}, torch::kLong);
  const auto targets = torch::randint(c.model.vocab_size, {batch, c.model.seq_len}, torch::kLong);
  // The best of several after a warm-up: on a busy machine some run gets the
  // core to itself. At least 3, more while they take under half a second.
  double best = 1e30;
  const auto probe_start = comm::Clock::now();
  for (int rep = 0; rep < 12; ++rep) {
    model->zero_grad();
    const auto start = comm::Clock::now();
    model->loss(tokens, targets).backward();
    const double s = comm::seconds_since(start);
    if (rep > 0) best = std::min(best, s);
    if (rep >= 3 && comm::seconds_since(probe_start) > 0.5) break;
  }
  plan::StageShape one_layer;
  one_layer.layers = 1;
  one_layer.has_embedding = one_layer.has_head = true;
  const double flops =
      3 * plan::forward_flops_per_token(c, one_layer, 1) * double(batch * c.model.seq_len);
  probe.seconds = best;
  probe.flops_per_second = flops / std::max(best, 1e-9);
  return probe;
}

}  // namespace cmpi::trainer
