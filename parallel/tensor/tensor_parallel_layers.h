// Megatron-style tensor-parallel layers over the tp group (see
// tensor_parallel_ops.h for the communication each one does):
//
// ColumnParallelLinear  y = x Wᵀ + b with W [out, in] split by rows (output
//   features): rank r holds W[r*out/tp .., :] and b's matching slice. The
//   input enters through copy_to_tp_region (its gradient is summed over the
//   group); the output stays split unless gather_output is set.
// RowParallelLinear     W [out, in] split by columns (input features): rank r
//   holds W[:, r*in/tp ..] and multiplies its slice of the input (already
//   split, e.g. a ColumnParallelLinear's output, unless input_is_parallel is
//   false); the partial products are summed with reduce_from_tp_region and
//   the (replicated) bias is added once, after the sum. The sum is float32,
//   rounded to the input's dtype once after the bias, unless
//   sum_in_input_dtype: then each rank's product is rounded to the input's
//   dtype first and the group sums those (16-bit words under 16-bit
//   compute: half the bytes, one more rounding, as Megatron-LM sums bf16).
// VocabParallelEmbedding  table [vocab, hidden] split by rows: rank r looks
//   up the ids in its range, writes zeros for the others, and the group sums
//   (reduce_from_tp_region), so every rank ends with the full embedding: in
//   float32, or with sum_dtype bfloat16/half, each rank's rows rounded to it
//   and summed as 16-bit words (exact: one rank holds each token's row),
//   the result widened back to float32. The table may have more rows than
//   the vocabulary (table_rows: padded so that tp splits it); ids never
//   reach the padded rows.
// vocab_parallel_logits  h · W_shardᵀ for a vocab-split table: each rank's
//   slice of the logits (h enters through copy_to_tp_region), the padded
//   rows' logits -inf so that no softmax gives them weight.
//
// With sequence_parallel (parallel/tensor/sequence_parallel_ops.h) the layers face
// sequence regions instead of replicated activations: a column-parallel
// layer's input and the logits' hidden states hold this rank's part of the
// sequence and are all-gathered (gradient: reduce-scattered) in place of
// copy_to_tp_region, keeping only that part for backward
// (sequence_gathered_linear); a row-parallel layer and the embedding reduce-scatter
// their partial sums along the sequence in place of the allreduce, and the
// row-parallel bias, added to this rank's positions only, has its gradient
// summed over tp.
//
// Parameters hold this rank's shard only; their gradients are the shard of
// the unsharded layer's gradients. With one tp rank the layers are the plain
// ones and send nothing.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <utility>

#include "comm/communicator.h"

namespace cmpi::parallel {

struct ParallelLinearOptions {
  int64_t in_features = 0;
  int64_t out_features = 0;
  bool bias = true;
  // ColumnParallelLinear only: allgather the output into the full features.
  bool gather_output = false;
  // RowParallelLinear only: false when the input is full and must be split here.
  bool input_is_parallel = true;
  // RowParallelLinear only: round each rank's partial product to the input's
  // dtype and sum in it (parallel.tp_forward_sum: compute) rather than in
  // float32. A no-op for float32 inputs and with one tp rank.
  bool sum_in_input_dtype = false;
  uint64_t buffer_key = 0;  // error-feedback key of this layer's traffic
  // The input (column-parallel) or output (row-parallel) is a sequence
  // region: [B, T/tp, ...] on each rank.
  bool sequence_parallel = false;
  // false: the parameters are unmaterialised() stand-ins of the right shape
  // (ZeRO-3 fills its shards itself and never builds the whole tensors).
  bool materialize = true;
};

class ColumnParallelLinearImpl : public torch::nn::Module {
 public:
  ColumnParallelLinearImpl(const ParallelLinearOptions& options, comm::Communicator& tp);
  torch::Tensor forward(const torch::Tensor& x);  // [..., in] -> [..., out/tp] (or out)
  // This layer's and `other`'s outputs on the same input, which enters the
  // tp region once for both (one all-gather under sequence parallelism, one
  // sum of the input gradient), where two forward() calls would each enter
  // it: a gated MLP's up and gate projections. Both keep their output split
  // (no gather_output); the traffic carries this layer's buffer key.
  std::pair<torch::Tensor, torch::Tensor> forward_with(ColumnParallelLinearImpl& other,
                                                       const torch::Tensor& x);

  torch::Tensor weight;  // [out/tp, in]
  torch::Tensor bias;    // [out/tp], undefined without bias

 private:
  ParallelLinearOptions options_;
  comm::Communicator* tp_;
};
TORCH_MODULE(ColumnParallelLinear);

class RowParallelLinearImpl : public torch::nn::Module {
 public:
  RowParallelLinearImpl(const ParallelLinearOptions& options, comm::Communicator& tp);
  torch::Tensor forward(const torch::Tensor& x);  // [..., in/tp] (or in) -> [..., out]

  torch::Tensor weight;  // [out, in/tp]
  torch::Tensor bias;    // [out], replicated

 private:
  ParallelLinearOptions options_;
  comm::Communicator* tp_;
};
TORCH_MODULE(RowParallelLinear);

class VocabParallelEmbeddingImpl : public torch::nn::Module {
 public:
  // materialize = false: the table is an unmaterialised() stand-in;
  // sequence_parallel: forward returns this rank's part of the sequence;
  // sum_dtype: the dtype the rows are rounded to and summed over tp in
  // (float32: unrounded; the output is float32 either way); table_rows:
  // the table's rows over the whole group, vocab_size padded (0: none).
  VocabParallelEmbeddingImpl(int64_t vocab_size, int64_t hidden, comm::Communicator& tp,
                             uint64_t buffer_key = 0, bool materialize = true,
                             bool sequence_parallel = false,
                             torch::ScalarType sum_dtype = torch::kFloat, int64_t table_rows = 0);
  // ids [...] int64 in [0, vocab) -> [..., hidden] (sequence_parallel: ids
  // [B, T] -> [B, T/tp, hidden]). An id outside the
  // vocabulary throws std::invalid_argument (rather than silently embedding
  // to zeros).
  torch::Tensor forward(const torch::Tensor& ids);

  int64_t first_id() const { return first_id_; }  // of this rank's range
  int64_t vocab_size() const { return vocab_size_; }

  torch::Tensor weight;  // [table_rows/tp, hidden]

 private:
  int64_t vocab_size_;
  int64_t first_id_;
  uint64_t buffer_key_;
  bool sequence_parallel_;
  torch::ScalarType sum_dtype_;
  comm::Communicator* tp_;
};
TORCH_MODULE(VocabParallelEmbedding);

// hidden [..., H], weight_shard [V/tp, H] -> this rank's logits [..., V/tp]
// (V: the table's rows). sequence_parallel: hidden [B, T/tp, H] (this rank's
// positions) -> logits [B, T, V/tp] of the whole sequence. vocab_size >= 0:
// the logits of ids at or past it (padded rows) are -inf.
torch::Tensor vocab_parallel_logits(const torch::Tensor& hidden, const torch::Tensor& weight_shard,
                                    comm::Communicator& tp, uint64_t buffer_key = 0,
                                    bool sequence_parallel = false, int64_t vocab_size = -1);

// The even split of `total` over the tp group; throws std::invalid_argument
// naming `what` when it does not divide.
int64_t tp_split(int64_t total, const comm::Communicator& tp, const char* what);

}  // namespace cmpi::parallel
