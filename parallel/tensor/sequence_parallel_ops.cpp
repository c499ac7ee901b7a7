// Each region change is a torch::autograd::Function whose forward and
// backward call the plain collectives below (the gathered linear also the
// arithmetic of leaf_saving_linear.h). The collectives work on the
// rank-major layout the Communicator expects: an allgather returns
// [tp, B, T/tp, ...] (rank r's block r), moved to [B, tp, T/tp, ...] and
// joined to [B, T, ...]; a reduce-scatter sends [B, T, ...] cut to
// [B, tp, T/tp, ...] and moved to [tp, B, T/tp, ...], so block r is rank
// r's positions. As in tensor_parallel_ops.cpp, a function remembers its tp
// group by address (parallel/tensor/tp_autograd_context.h).
#include "parallel/tensor/sequence_parallel_ops.h"

#include <stdexcept>
#include <string>
#include <vector>

#include "parallel/host_staging.h"
#include "parallel/leaf_saving_linear.h"
#include "parallel/tensor/tensor_parallel_ops.h"
#include "parallel/tensor/tp_autograd_context.h"
#include "parallel/tensor_words.h"

namespace cmpi::parallel {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr int64_t kSequenceDim = 1;

void require_sequence_tensor(const torch::Tensor& x, const char* op) {
  require_travelling_tensor(x, op, 2, "[batch, time, ...]");
}

struct SequenceGatheredLinear : torch::autograd::Function<SequenceGatheredLinear> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, comm::Communicator* tp, uint64_t key) {
    remember_tp_group(ctx, *tp, key);
    ctx->save_for_backward({x, weight});
    return linear_products(tp_allgather_sequence(x, *tp, comm::Role::kActivation, key), weight);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    comm::Communicator& tp = remembered_tp_group(ctx);
    // The forward's values again: role activation.
    const auto gathered =
        tp_allgather_sequence(saved[0], tp, comm::Role::kActivation, remembered_buffer_key(ctx));
    auto gradients = linear_gradients(gathered, saved[1], grads[0], ctx->needs_input_grad(0),
                                      ctx->needs_input_grad(1));
    torch::Tensor dx;
    if (gradients.dx.defined())
      dx = tp_reduce_scatter_sequence(gradients.dx, tp, comm::Role::kActivationGrad,
                                      remembered_buffer_key(ctx));
    return {dx, gradients.dw, torch::Tensor(), torch::Tensor()};
  }
};

// SequenceGatheredLinear for two weights on one gathered input.
struct SequenceGatheredLinearPair : torch::autograd::Function<SequenceGatheredLinearPair> {
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight_a, const torch::Tensor& weight_b,
                               comm::Communicator* tp, uint64_t key) {
    remember_tp_group(ctx, *tp, key);
    ctx->save_for_backward({x, weight_a, weight_b});
    const auto gathered = tp_allgather_sequence(x, *tp, comm::Role::kActivation, key);
    return {linear_products(gathered, weight_a), linear_products(gathered, weight_b)};
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    comm::Communicator& tp = remembered_tp_group(ctx);
    const auto gathered =
        tp_allgather_sequence(saved[0], tp, comm::Role::kActivation, remembered_buffer_key(ctx));
    const bool want_dx = ctx->needs_input_grad(0);
    torch::Tensor dx, dw[2];
    for (int i = 0; i < 2; ++i) {
      if (!grads[size_t(i)].defined()) continue;
      auto g = linear_gradients(gathered, saved[size_t(1 + i)], grads[size_t(i)], want_dx,
                                ctx->needs_input_grad(size_t(1 + i)));
      dw[i] = g.dw;
      if (g.dx.defined()) dx = dx.defined() ? dx + g.dx : g.dx;
    }
    if (dx.defined())
      dx = tp_reduce_scatter_sequence(dx, tp, comm::Role::kActivationGrad,
                                      remembered_buffer_key(ctx));
    return {dx, dw[0], dw[1], torch::Tensor(), torch::Tensor()};
  }
};

struct ReduceScatterToSequenceRegion : torch::autograd::Function<ReduceScatterToSequenceRegion> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, comm::Communicator* tp,
                               uint64_t key) {
    remember_tp_group(ctx, *tp, key);
    return tp_reduce_scatter_sequence(x, *tp, comm::Role::kActivation, key);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {tp_allgather_sequence(grads[0], remembered_tp_group(ctx), comm::Role::kActivationGrad,
                                  remembered_buffer_key(ctx)),
            torch::Tensor(), torch::Tensor()};
  }
};

struct SumGradientOverTp : torch::autograd::Function<SumGradientOverTp> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& parameter,
                               comm::Communicator* tp) {
    remember_tp_group(ctx, *tp, 0);
    return parameter.detach().clone();
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto sum = host_copy(grads[0].to(torch::kFloat));  // through host memory from a device
    remembered_tp_group(ctx).exact_allreduce(sum.data_ptr<float>(), size_t(sum.numel()));
    return {on_device(sum, grads[0].device()).to(grads[0].scalar_type()), torch::Tensor()};
  }
};

}  // namespace

SequenceShard sequence_shard(int64_t length, const comm::Communicator& tp) {
  if (length <= 0 || length % tp.size() != 0)
    throw std::invalid_argument("sequence parallelism: a sequence of " + std::to_string(length) +
                                " positions does not split evenly over the tp group of " +
                                std::to_string(tp.size()) + " ranks");
  const int64_t count = length / tp.size();
  return {int64_t(tp.rank()) * count, count};
}

torch::Tensor tp_allgather_sequence(const torch::Tensor& x, comm::Communicator& tp, comm::Role role,
                                    uint64_t buffer_key) {
  require_sequence_tensor(x, "sequence-parallel allgather");
  return tp_allgather_along(x, kSequenceDim, tp, role, buffer_key, "sequence-parallel allgather");
}

torch::Tensor tp_reduce_scatter_sequence(const torch::Tensor& x, comm::Communicator& tp,
                                         comm::Role role, uint64_t buffer_key) {
  require_sequence_tensor(x, "sequence-parallel reduce-scatter");
  const int parts = tp.size();
  const int64_t shard = sequence_shard(x.size(kSequenceDim), tp).count;
  // A device tensor travels through host memory.
  const auto blocks = host_contiguous(
      x.detach().unflatten(kSequenceDim, {int64_t(parts), shard}).movedim(kSequenceDim, 0));
  std::vector<int64_t> local_shape(x.sizes().begin(), x.sizes().end());
  local_shape[kSequenceDim] = shard;
  auto out = torch::empty(local_shape, blocks.options());
  const std::vector<size_t> counts(size_t(parts), size_t(out.numel()));
  if (x.scalar_type() == torch::kFloat) {
    tp.reduce_scatter(blocks.data_ptr<float>(), out.data_ptr<float>(), counts, role, buffer_key);
  } else {
    // 16-bit values travel as 16-bit words, summed in float and rounded once
    // per reduction step, as tp_allreduce_sum's (comm/communicator_words16.cpp).
    tp.reduce_scatter(words_of(blocks), words_of(out), counts,
                      word_type_of(x.scalar_type(), "sequence-parallel reduce-scatter"), role,
                      buffer_key);
  }
  return on_device(out, x.device());
}

torch::Tensor sequence_gathered_linear(const torch::Tensor& x, const torch::Tensor& weight,
                                       const torch::Tensor& bias, comm::Communicator& tp,
                                       uint64_t buffer_key) {
  if (tp.size() == 1) return leaf_saving_linear(x, weight, bias);
  require_sequence_tensor(x, "sequence-parallel linear");
  // The bias outside the node, as leaf_saving_linear adds it.
  auto y = SequenceGatheredLinear::apply(x, weight, &tp, buffer_key);
  if (bias.defined()) y = y + bias;
  return y.to(x.scalar_type());
}

std::pair<torch::Tensor, torch::Tensor> sequence_gathered_linear_pair(
    const torch::Tensor& x, const torch::Tensor& weight_a, const torch::Tensor& bias_a,
    const torch::Tensor& weight_b, const torch::Tensor& bias_b, comm::Communicator& tp,
    uint64_t buffer_key) {
  if (tp.size() == 1)
    return {leaf_saving_linear(x, weight_a, bias_a), leaf_saving_linear(x, weight_b, bias_b)};
  require_sequence_tensor(x, "sequence-parallel linear");
  const auto products = SequenceGatheredLinearPair::apply(x, weight_a, weight_b, &tp, buffer_key);
  // The biases outside the node, as sequence_gathered_linear adds them.
  auto a = products[0], b = products[1];
  if (bias_a.defined()) a = a + bias_a;
  if (bias_b.defined()) b = b + bias_b;
  return {a.to(x.scalar_type()), b.to(x.scalar_type())};
}

torch::Tensor reduce_scatter_to_sequence_region(const torch::Tensor& x, comm::Communicator& tp,
                                                uint64_t buffer_key) {
  if (tp.size() == 1) return x;
  return ReduceScatterToSequenceRegion::apply(x, &tp, buffer_key);
}

torch::Tensor sum_gradient_over_tp(const torch::Tensor& parameter, comm::Communicator& tp) {
  if (tp.size() == 1) return parameter;
  return SumGradientOverTp::apply(parameter, &tp);
}

}  // namespace cmpi::parallel
