// Tensor-parallel layers: each is the plain layer's arithmetic on this rank's
// shard, wrapped in the conjugate communication pair that makes forward and
// backward equal the unsharded layer's (see tensor_parallel_layers.h).
// Parameters start at zero (or as unmaterialised stand-ins); the model fills
// them from the global weights. The matmuls with weights go through
// leaf_saving_linear, so autograd keeps the parameters, not their storage.
#include "parallel/tensor/tensor_parallel_layers.h"

#include <limits>
#include <stdexcept>
#include <string>

#include "parallel/leaf_saving_linear.h"
#include "parallel/tensor/sequence_parallel_ops.h"
#include "parallel/tensor/tensor_parallel_ops.h"
#include "parallel/unmaterialised.h"

namespace cmpi::parallel {
namespace {

torch::Tensor parameter_storage(std::vector<int64_t> shape, bool materialize) {
  return materialize ? torch::zeros(shape) : unmaterialised(shape);
}

}  // namespace

int64_t tp_split(int64_t total, const comm::Communicator& tp, const char* what) {
  if (total <= 0 || total % tp.size() != 0)
    throw std::invalid_argument(std::string(what) + " (" + std::to_string(total) +
                                ") must be positive and divisible by the tp group size (" +
                                std::to_string(tp.size()) + ")");
  return total / tp.size();
}

ColumnParallelLinearImpl::ColumnParallelLinearImpl(const ParallelLinearOptions& options,
                                                   comm::Communicator& tp)
    : options_(options), tp_(&tp) {
  const int64_t out_shard = tp_split(options.out_features, tp, "column-parallel out_features");
  if (options.in_features <= 0)
    throw std::invalid_argument("column-parallel in_features must be positive");
  weight = register_parameter(
      "weight", parameter_storage({out_shard, options.in_features}, options.materialize));
  if (options.bias)
    bias = register_parameter("bias", parameter_storage({out_shard}, options.materialize));
}

torch::Tensor ColumnParallelLinearImpl::forward(const torch::Tensor& x) {
  auto y = options_.sequence_parallel
               ? sequence_gathered_linear(x, weight, bias, *tp_, options_.buffer_key)
               : leaf_saving_linear(copy_to_tp_region(x, *tp_, options_.buffer_key), weight, bias);
  return options_.gather_output ? gather_from_tp_region(y, *tp_, options_.buffer_key) : y;
}

std::pair<torch::Tensor, torch::Tensor> ColumnParallelLinearImpl::forward_with(
    ColumnParallelLinearImpl& other, const torch::Tensor& x) {
  if (options_.gather_output || other.options_.gather_output ||
      options_.sequence_parallel != other.options_.sequence_parallel || tp_ != other.tp_)
    throw std::logic_error(
        "column-parallel forward_with: both layers must keep their outputs "
        "split, on one tp group and in the same region");
  if (options_.sequence_parallel)
    return sequence_gathered_linear_pair(x, weight, bias, other.weight, other.bias, *tp_,
                                         options_.buffer_key);
  const auto entered = copy_to_tp_region(x, *tp_, options_.buffer_key);
  return {leaf_saving_linear(entered, weight, bias),
          leaf_saving_linear(entered, other.weight, other.bias)};
}

RowParallelLinearImpl::RowParallelLinearImpl(const ParallelLinearOptions& options,
                                             comm::Communicator& tp)
    : options_(options), tp_(&tp) {
  const int64_t in_shard = tp_split(options.in_features, tp, "row-parallel in_features");
  if (options.out_features <= 0)
    throw std::invalid_argument("row-parallel out_features must be positive");
  weight = register_parameter(
      "weight", parameter_storage({options.out_features, in_shard}, options.materialize));
  if (options.bias)
    bias =
        register_parameter("bias", parameter_storage({options.out_features}, options.materialize));
}

torch::Tensor RowParallelLinearImpl::forward(const torch::Tensor& x) {
  const auto input =
      options_.input_is_parallel ? x : scatter_to_tp_region(x, *tp_, options_.buffer_key);
  // The partial products are summed over tp in float32 and rounded to the
  // compute dtype once, after the bias (a no-op for float32 inputs); or, in
  // the input's dtype, each rank's product rounded first and the bias added
  // (in float32) to the rounded sum. One rank's product is the sum itself:
  // rounding it before the bias would only round twice.
  const bool round_first = options_.sum_in_input_dtype && tp_->size() > 1;
  const auto partial =
      round_first ? leaf_saving_linear(input, weight) : leaf_saving_linear_float32(input, weight);
  if (options_.sequence_parallel) {
    auto y = reduce_scatter_to_sequence_region(partial, *tp_, options_.buffer_key);
    if (bias.defined()) y = y + sum_gradient_over_tp(bias, *tp_);
    return y.to(input.scalar_type());
  }
  auto y = reduce_from_tp_region(partial, *tp_, options_.buffer_key);
  if (bias.defined()) y = y + bias;
  return y.to(input.scalar_type());
}

VocabParallelEmbeddingImpl::VocabParallelEmbeddingImpl(int64_t vocab_size, int64_t hidden,
                                                       comm::Communicator& tp, uint64_t buffer_key,
                                                       bool materialize, bool sequence_parallel,
                                                       torch::ScalarType sum_dtype,
                                                       int64_t table_rows)
    : vocab_size_(vocab_size),
      buffer_key_(buffer_key),
      sequence_parallel_(sequence_parallel),
      sum_dtype_(sum_dtype),
      tp_(&tp) {
  if (table_rows == 0) table_rows = vocab_size;
  if (table_rows < vocab_size)
    throw std::invalid_argument("vocab-parallel embedding: " + std::to_string(table_rows) +
                                " rows cannot hold a vocabulary of " + std::to_string(vocab_size));
  const int64_t rows = tp_split(table_rows, tp, "vocab-parallel embedding rows");
  if (hidden <= 0) throw std::invalid_argument("vocab-parallel embedding hidden must be positive");
  first_id_ = int64_t(tp.rank()) * rows;
  weight = register_parameter("weight", parameter_storage({rows, hidden}, materialize));
}

torch::Tensor VocabParallelEmbeddingImpl::forward(const torch::Tensor& ids) {
  if (ids.scalar_type() != torch::kLong)
    throw std::invalid_argument("vocab-parallel embedding: ids must be int64");
  if (ids.numel() > 0) {
    const int64_t low = ids.min().item<int64_t>(), high = ids.max().item<int64_t>();
    if (low < 0 || high >= vocab_size_)
      throw std::invalid_argument(
          "vocab-parallel embedding: token id " + std::to_string(low < 0 ? low : high) +
          " is outside the vocabulary [0, " + std::to_string(vocab_size_) + ")");
  }
  if (tp_->size() == 1) return torch::embedding(weight, ids);
  const int64_t rows = weight.size(0);
  const auto mine = (ids >= first_id_) & (ids < first_id_ + rows);
  const auto local_ids = (ids - first_id_).masked_fill(~mine, 0);
  // Masked positions look up row 0 and are zeroed, so row 0's gradient gets
  // nothing from them.
  // A 16-bit sum_dtype: each token's row is rounded on the one rank that
  // holds it, the others add zeros, so the 16-bit sum is that rounded row.
  const auto rows_out =
      torch::embedding(weight, local_ids).masked_fill(~mine.unsqueeze(-1), 0.0).to(sum_dtype_);
  const auto summed = sequence_parallel_
                          ? reduce_scatter_to_sequence_region(rows_out, *tp_, buffer_key_)
                          : reduce_from_tp_region(rows_out, *tp_, buffer_key_);
  return summed.to(weight.scalar_type());
}

torch::Tensor vocab_parallel_logits(const torch::Tensor& hidden, const torch::Tensor& weight_shard,
                                    comm::Communicator& tp, uint64_t buffer_key,
                                    bool sequence_parallel, int64_t vocab_size) {
  auto logits = sequence_parallel
                    ? sequence_gathered_linear(hidden, weight_shard, {}, tp, buffer_key)
                    : leaf_saving_linear(copy_to_tp_region(hidden, tp, buffer_key), weight_shard);
  const int64_t slice = weight_shard.size(0), first_id = int64_t(tp.rank()) * slice;
  if (vocab_size < 0 || first_id + slice <= vocab_size) return logits;
  // Padded rows: their logits leave every softmax (and their rows' gradient
  // is zero, masked_fill's backward).
  const auto padded = torch::arange(first_id, first_id + slice, torch::kLong) >= vocab_size;
  return logits.masked_fill(padded.to(logits.device()), -std::numeric_limits<float>::infinity());
}

}  // namespace cmpi::parallel
