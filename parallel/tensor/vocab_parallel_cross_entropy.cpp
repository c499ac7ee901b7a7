// Vocab-parallel cross-entropy works as follows. For each token i every rank
// r computes, on its own slice z_r of the logits:
//   m_r = max z_r,   s_r = sum exp(z_r - m_r),   t_r = z_r[target] if the
//   target id falls in r's range, else 0,
// and the group allgathers these three numbers per token (one call, role
// `activation`). Then, identically on every rank,
//   M = max_r m_r,   lse = M + log sum_r s_r exp(m_r - M),   z_target = sum_r t_r,
//   loss_i = lse - z_target.
// Gathering (m, s) instead of agreeing on one max first keeps the result
// self-consistent on each rank even if a lossy policy perturbs the gathered
// numbers a little. Backward: d loss / d z_r = exp(z_r - lse) - one_hot on
// the slice that holds the target, times the incoming gradient — local,
// no communication.
#include "parallel/tensor/vocab_parallel_cross_entropy.h"

#include <stdexcept>
#include <string>

#include "parallel/tensor/tensor_parallel_ops.h"

namespace cmpi::parallel {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct VocabParallelCrossEntropy : torch::autograd::Function<VocabParallelCrossEntropy> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& logits_shard,
                               const torch::Tensor& targets, comm::Communicator* tp, uint64_t key) {
    const int64_t slice = logits_shard.size(-1);
    const int64_t first_id = int64_t(tp->rank()) * slice;
    const auto logits = logits_shard.reshape({-1, slice});
    const auto ids = targets.reshape({-1});

    const auto local_max = std::get<0>(logits.max(/*dim=*/1));
    const auto local_sum = (logits - local_max.unsqueeze(1)).exp_().sum(1);
    const auto mine = (ids >= first_id) & (ids < first_id + slice);
    const auto local_ids = (ids - first_id).masked_fill(~mine, 0);
    const auto local_target =
        logits.gather(1, local_ids.unsqueeze(1)).squeeze(1).masked_fill(~mine, 0.0);

    auto stats = torch::stack({local_max, local_sum, local_target}).contiguous();  // [3, N]
    if (tp->size() > 1)
      stats = tp_allgather_last_dim(stats, *tp, comm::Role::kActivation, key)
                  .view({3, tp->size(), -1});  // [3, ranks, N]
    else
      stats = stats.unsqueeze(1);
    const auto maxima = stats[0], sums = stats[1], targets_part = stats[2];
    const auto global_max = std::get<0>(maxima.max(/*dim=*/0));
    const auto lse = global_max + (sums * (maxima - global_max).exp()).sum(0).log();
    const auto losses = lse - targets_part.sum(0);

    ctx->save_for_backward({logits, lse, local_ids, mine});
    ctx->saved_data["shape"] = logits_shard.sizes().vec();
    return losses.view(targets.sizes());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &logits = saved[0], &lse = saved[1], &local_ids = saved[2], &mine = saved[3];
    auto grad = (logits - lse.unsqueeze(1)).exp_();
    grad.scatter_add_(1, local_ids.unsqueeze(1), -mine.to(grad.scalar_type()).unsqueeze(1));
    grad.mul_(grads[0].reshape({-1, 1}));
    return {grad.view(ctx->saved_data["shape"].toIntVector()), torch::Tensor(), torch::Tensor(),
            torch::Tensor()};
  }
};

void check_inputs(const torch::Tensor& logits, const torch::Tensor& targets,
                  const comm::Communicator& tp, int64_t vocab_size) {
  if (logits.scalar_type() != torch::kFloat)
    throw std::invalid_argument("vocab_parallel_cross_entropy: logits must be float32");
  if (targets.scalar_type() != torch::kLong)
    throw std::invalid_argument("vocab_parallel_cross_entropy: targets must be int64 token ids");
  if (targets.device() != logits.device())
    throw std::invalid_argument("vocab_parallel_cross_entropy: targets on " +
                                targets.device().str() + ", logits on " + logits.device().str());
  if (logits.dim() != targets.dim() + 1 ||
      logits.sizes().slice(0, size_t(targets.dim())) != targets.sizes())
    throw std::invalid_argument("vocab_parallel_cross_entropy: logits " + c10::str(logits.sizes()) +
                                " must be the targets' shape " + c10::str(targets.sizes()) +
                                " plus a vocabulary dim");
  const int64_t vocab = vocab_size >= 0 ? vocab_size : logits.size(-1) * tp.size();
  if (targets.numel() > 0) {
    const int64_t low = targets.min().item<int64_t>(), high = targets.max().item<int64_t>();
    if (low < 0 || high >= vocab)
      throw std::invalid_argument("vocab_parallel_cross_entropy: target id " +
                                  std::to_string(low < 0 ? low : high) +
                                  " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
  }
}

}  // namespace

torch::Tensor vocab_parallel_cross_entropy(const torch::Tensor& logits_shard,
                                           const torch::Tensor& targets, comm::Communicator& tp,
                                           uint64_t buffer_key, int64_t vocab_size) {
  check_inputs(logits_shard, targets, tp, vocab_size);
  return VocabParallelCrossEntropy::apply(logits_shard, targets, &tp, buffer_key);
}

}  // namespace cmpi::parallel
