// One custom autograd Function; forward and backward walk the same key
// blocks in the same order, so the dropout masks drawn in backward (from the
// generator state saved at forward) are forward's.
#include "models/blocked_attention.h"

#include "parallel/replayed_dropout.h"

#include <cmath>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>

namespace cmpi::models {
namespace {

using torch::autograd::variable_list;

struct Geometry {
  int64_t time, block;
  double scale, dropout;
};

// The key block [start, start + width) of x [B, h, T, d].
torch::Tensor keys(const torch::Tensor& x, int64_t start, int64_t width) {
  return x.narrow(2, start, width);
}

// The query rows [start, T) of x [B, h, T, .]: the rows that see any key of
// the block starting at `start` (the rows before it lie wholly in its past).
torch::Tensor rows_from(const torch::Tensor& x, int64_t start) {
  return x.narrow(2, start, x.size(2) - start);
}

// q_rows k_jᵀ · scale with the future masked to -inf, for the query rows
// [start, T) and the key block [start, start + width): [B, h, T - start, width].
torch::Tensor block_scores(const torch::Tensor& q_rows, const torch::Tensor& k_block,
                           const torch::Tensor& future, int64_t start, int64_t width,
                           double scale) {
  auto scores = torch::matmul(q_rows, k_block.transpose(-2, -1)).mul_(scale);
  return scores.masked_fill_(future.narrow(0, start, q_rows.size(2)).narrow(1, start, width),
                             -std::numeric_limits<float>::infinity());
}

struct BlockedAttention : torch::autograd::Function<BlockedAttention> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& q,
                               const torch::Tensor& k, const torch::Tensor& v,
                               const torch::Tensor& future, int64_t block, double dropout,
                               at::Generator generator) {
    const int64_t time = q.size(2);
    const double scale = 1.0 / std::sqrt(double(q.size(3)));
    parallel::record_dropout(ctx, dropout, generator);
    auto row_max = torch::full({q.size(0), q.size(1), time, 1},
                               -std::numeric_limits<float>::infinity(), q.options());
    auto row_sum = torch::zeros_like(row_max);
    auto acc = torch::zeros(q.sizes(), q.options());
    for (int64_t start = 0; start < time; start += block) {
      const int64_t width = std::min(block, time - start);
      // Only the rows from `start` on see this block (the first block is
      // seen by every row, so each row's maximum is finite from then on).
      auto max_rows = rows_from(row_max, start), sum_rows = rows_from(row_sum, start),
           acc_rows = rows_from(acc, start);
      auto scores =
          block_scores(rows_from(q, start), keys(k, start, width), future, start, width, scale);
      const auto new_max = torch::maximum(max_rows, std::get<0>(scores.max(-1, true)));
      const auto rescale = (max_rows - new_max).exp_();
      auto weights = scores.sub_(new_max).exp_();
      sum_rows.mul_(rescale).add_(weights.sum(-1, true));
      if (dropout > 0) weights.mul_(parallel::dropout_keep_mask(weights, dropout, generator));
      acc_rows.mul_(rescale).add_(torch::matmul(weights, keys(v, start, width)));
      max_rows.copy_(new_max);
    }
    auto out = acc.div_(row_sum);
    auto lse = row_max.add_(row_sum.log_());
    ctx->save_for_backward({q, k, v, out, lse, future});
    ctx->saved_data["block"] = block;
    return out;
  }

  static variable_list backward(torch::autograd::AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &q = saved[0], &k = saved[1], &v = saved[2], &out = saved[3], &lse = saved[4],
               &future = saved[5];
    const int64_t block = ctx->saved_data["block"].toInt();
    parallel::ReplayedDropout replay(ctx);
    const double dropout = replay.dropout();
    const auto d_out = grads[0];
    const int64_t time = q.size(2);
    const double scale = 1.0 / std::sqrt(double(q.size(3)));
    const auto row_dot = (d_out * out).sum(-1, true);  // D
    auto dq = torch::zeros(q.sizes(), q.options());
    auto dk = torch::empty(k.sizes(), k.options());
    auto dv = torch::empty(v.sizes(), v.options());
    for (int64_t start = 0; start < time; start += block) {
      const int64_t width = std::min(block, time - start);
      const auto k_block = keys(k, start, width), v_block = keys(v, start, width);
      // The rows before `start` have probability 0 on this block: nothing
      // of theirs flows to it or from it.
      const auto q_rows = rows_from(q, start), d_out_rows = rows_from(d_out, start);
      auto probabilities = block_scores(q_rows, k_block, future, start, width, scale)
                               .sub_(rows_from(lse, start))
                               .exp_();
      auto d_probabilities = torch::matmul(d_out_rows, v_block.transpose(-2, -1));
      if (dropout > 0) {
        const auto keep = parallel::dropout_keep_mask(probabilities, dropout, replay.generator());
        keys(dv, start, width)
            .copy_(torch::matmul((probabilities * keep).transpose(-2, -1), d_out_rows));
        d_probabilities.mul_(keep);
      } else {
        keys(dv, start, width).copy_(torch::matmul(probabilities.transpose(-2, -1), d_out_rows));
      }
      auto d_scores =
          probabilities.mul_(d_probabilities.sub_(rows_from(row_dot, start))).mul_(scale);
      rows_from(dq, start).add_(torch::matmul(d_scores, k_block));
      keys(dk, start, width).copy_(torch::matmul(d_scores.transpose(-2, -1), q_rows));
    }
    return {dq, dk, dv, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor blocked_causal_attention(const torch::Tensor& q, const torch::Tensor& k,
                                       const torch::Tensor& v, const torch::Tensor& future_mask,
                                       int64_t block, double dropout, bool training,
                                       at::Generator generator) {
  if (block <= 0)
    throw std::invalid_argument("blocked attention: block must be positive, got " +
                                std::to_string(block));
  return BlockedAttention::apply(q, k, v, future_mask, block, training ? dropout : 0.0,
                                 std::move(generator));
}

}  // namespace cmpi::models
