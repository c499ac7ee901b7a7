// GptOptions: the shape and architecture of a GPT decoder (plain numbers, no
// torch). The defaults are GPT-2's; GPT-NeoX's architecture is the switches
// position = kRotary, parallel_residual, activation = kGeluTanh,
// init = kNeox and tie_embeddings = false; Llama's is norm = kRmsNorm,
// activation = kSwiGlu (with intermediate_size), kv_heads (grouped-query
// attention), bias = false, position = kRotary with rotary_pct 1 and its
// rotary_base (rope_theta), tie_embeddings = false (Llama 3: rope_scaling).
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace cmpi::models {

// How a token learns its position: a learned table added to the token
// embedding (GPT-2), or rotary embeddings that turn each head's queries and
// keys by angles proportional to the position (RoFormer; GPT-NeoX).
enum class PositionEncoding { kLearned, kRotary };
// The MLP's nonlinearity: GeLU with the exact erf (GPT-2 here), or its tanh
// approximation 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), which GPT-NeoX's
// fused kernel computes.
// kSwiGlu makes the MLP gated (Shazeer 2020, as Llama): down(silu(gate(x)) ·
// up(x)), three weight matrices instead of two.
enum class MlpActivation { kGelu, kGeluTanh, kSwiGlu };
// The normalisation layers: LayerNorm (weight and bias), or RMSNorm (Zhang &
// Sennrich 2019, as Llama): x / √(mean(x²) + eps) · weight.
enum class NormKind { kLayerNorm, kRmsNorm };
// Llama 3's rotary frequency scaling (models/rotary_embedding.h); factor 0:
// none.
struct RopeScaling {
  double factor = 0.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_positions = 8192;
};
// Initial weights: GPT-2's N(0, init_std) with the output projections scaled
// by 1/√(2·layers), or GPT-NeoX's small_init / wang_init (input_init_std,
// output_init_std).
enum class InitScheme { kGpt2, kNeox };
// Activation recomputation (models/recompute.h): none; the attention core
// only (QKᵀ, mask, softmax, dropout, ·V: the [B, heads, T, T] tensors);
// or whole blocks, each keeping only its input.
enum class Recompute { kNone, kSelective, kFull };

// The dtype forward and backward compute in (training.precision). The
// parameters stay float32 (the optimizer's masters) and are rounded to it on
// every use; see parallel/low_precision_ops.h for what runs in float32.
enum class ComputePrecision { kFp32, kBf16, kFp16 };

// The attention core's kernel. kAuto: LibTorch's scaled-dot-product
// attention (its flash / memory-efficient kernels) on a CUDA device, the
// explicit softmax (or the blocked one, attention_block_size) on the CPU.
// kFused and kUnfused force one (tests hold the two to each other on the
// CPU). The fused kernel draws dropout from its device's own generator,
// which recomputation cannot replay: with attention dropout in training
// the explicit path runs whatever this says.
enum class AttentionBackend { kAuto, kFused, kUnfused };

struct GptOptions {
  int64_t vocab_size = 256;
  // The tables' rows are padded to a multiple of vocab_multiple x tp
  // (padded_vocab_size); the padded rows are masked out of every softmax.
  int64_t vocab_multiple = 1;
  int64_t seq_len = 64;
  int64_t layers = 2;
  int64_t hidden = 64;
  int64_t heads = 4;
  int64_t mlp_ratio = 4;
  double dropout = 0.0;
  double init_std = 0.02;  // InitScheme::kGpt2 only
  // false: the output head has its own table ("output_head.weight", split
  // over tp by vocabulary rows like the embedding) instead of the token
  // embedding's.
  bool tie_embeddings = true;
  PositionEncoding position = PositionEncoding::kLearned;
  // Rotary only: the fraction of each head's dimensions that rotate (the
  // first rotary_dims() of them; GPT-NeoX-20B: 0.25) and the base of the
  // angles' wavelengths (10000).
  double rotary_pct = 0.25;
  double rotary_base = 10000.0;
  // true: x + attn(ln1(x)) + mlp(ln2(x)) (GPT-NeoX, GPT-J); false: the
  // sequential pre-LN block h = x + attn(ln1(x)); h + mlp(ln2(h)) (GPT-2).
  bool parallel_residual = false;
  MlpActivation activation = MlpActivation::kGelu;
  InitScheme init = InitScheme::kGpt2;
  NormKind norm = NormKind::kLayerNorm;
  double norm_eps = 1e-5;
  // Key/value heads (grouped-query attention: heads / kv_heads query heads
  // share each); 0: as many as heads (multi-head attention).
  int64_t kv_heads = 0;
  // The MLP's inner width; 0: mlp_ratio · hidden.
  int64_t intermediate_size = 0;
  // false: no biases in the linear layers and the norms.
  bool bias = true;
  RopeScaling rope_scaling;
  ComputePrecision precision = ComputePrecision::kFp32;
  Recompute recompute = Recompute::kNone;
  // > 0: the attention core in blocks of this many keys with an online
  // softmax (models/blocked_attention.h), when the sequence is longer.
  int64_t attention_block_size = 0;
  AttentionBackend attention_backend = AttentionBackend::kAuto;
  // kFull: the first this many blocks of each pipeline stage are recomputed
  // (0: all of them), as Megatron's recompute_num_layers.
  int64_t recompute_layers = 0;
  // Megatron-SP (parallel.sequence_parallel): outside the tensor-parallel
  // layers every tp rank holds 1/tp of the sequence (parallel/
  // sequence_parallel_ops.h); seq_len must be divisible by the tp size.
  bool sequence_parallel = false;
  // parallel.tp_forward_sum: compute: the row-parallel layers' partial
  // products and the vocab-parallel embedding's rows are rounded to the
  // compute dtype on each tp rank and summed in it (16-bit words) instead of
  // in float32; the row-parallel bias is still added once, after the sum.
  bool tp_sums_in_compute_dtype = false;
  // Initial weights are a function of (seed, parameter name) alone.
  uint64_t seed = 0;
  // false: parameters are unmaterialised stand-ins (parallel/unmaterialised.h)
  // whose values a ZeRO-3 optimizer generates shard by shard
  // (GptImpl::fill_initial_values); no rank builds a whole tensor.
  bool materialize_parameters = true;

  int64_t head_dim() const { return hidden / heads; }
  int64_t kv_head_count() const { return kv_heads > 0 ? kv_heads : heads; }
  // Query heads per key/value head.
  int64_t query_group() const { return heads / kv_head_count(); }
  int64_t mlp_width() const {
    return intermediate_size > 0 ? intermediate_size : mlp_ratio * hidden;
  }
  bool gated_mlp() const { return activation == MlpActivation::kSwiGlu; }
  // Rotary: the rotating dimensions of each head, head_dim · rotary_pct
  // rounded down (as GPT-NeoX does); 0 with learned positions. They rotate in
  // pairs, so a valid model has an even, positive count.
  int64_t rotary_dims() const {
    return position == PositionEncoding::kRotary ? int64_t(double(head_dim()) * rotary_pct) : 0;
  }
  bool learned_positions() const { return position == PositionEncoding::kLearned; }

  // The std of the weights that read the residual stream or a table: token
  // and position embeddings, the fused q/k/v, the MLP's first layer, an
  // untied output head.
  //   gpt2: init_std.
  //   neox: small_init (Nguyen & Salazar 2019, as GPT-NeoX-20B §2.3.1
  //         states it): √(2 / (5·hidden)), i.e. √(2 / (d + 4d)).
  double input_init_std() const {
    return init == InitScheme::kNeox ? std::sqrt(2.0 / (5.0 * double(hidden))) : init_std;
  }
  // The std of the projections that write into the residual stream (the
  // attention's output and the MLP's second layer).
  //   gpt2: init_std / √(2·layers).
  //   neox: wang_init (Wang 2021, GPT-NeoX-20B §2.3.1): 2 / (layers·√hidden).
  double output_init_std() const {
    return init == InitScheme::kNeox ? 2.0 / (double(layers) * std::sqrt(double(hidden)))
                                     : init_std / std::sqrt(2.0 * double(layers));
  }

  // One block's parameters in registration order (models/transformer_block.cpp),
  // as one tp rank holds them: elements, and whether every tp rank holds the
  // whole tensor (norms, row-parallel biases) or its 1/tp slice.
  struct BlockParameter {
    int64_t elements;
    bool replicated;
  };
  std::vector<BlockParameter> block_parameters(int64_t tp) const {
    const int64_t qkv_rows = (heads + 2 * kv_head_count()) * head_dim();
    const int64_t inner = mlp_width();
    const bool norm_bias = norm == NormKind::kLayerNorm && bias;
    std::vector<BlockParameter> out;
    const auto add = [&out](int64_t elements, bool replicated) {
      out.push_back({elements, replicated});
    };
    const auto add_norm = [&] {
      add(hidden, true);
      if (norm_bias) add(hidden, true);
    };
    add_norm();                          // ln1
    add(qkv_rows * hidden / tp, false);  // attention.qkv
    if (bias) add(qkv_rows / tp, false);
    add(hidden * hidden / tp, false);  // attention.out
    if (bias) add(hidden, true);
    add_norm();                                        // ln2
    for (int i = 0; i < (gated_mlp() ? 2 : 1); ++i) {  // fc_gate, fc_in
      add(inner * hidden / tp, false);
      if (bias) add(inner / tp, false);
    }
    add(hidden * inner / tp, false);  // fc_out
    if (bias) add(hidden, true);
    return out;
  }
  int64_t norm_parameters() const {
    return (norm == NormKind::kLayerNorm && bias ? 2 : 1) * hidden;
  }

  // Rows of the embedding (and head) table under a tp group of `tp` ranks:
  // vocab_size rounded up to a multiple of vocab_multiple x tp.
  int64_t padded_vocab_size(int64_t tp) const {
    const int64_t multiple = vocab_multiple * tp;
    return (vocab_size + multiple - 1) / multiple * multiple;
  }

  // Parameters of the model (one more vocab x hidden table when untied; no
  // position table with rotary positions; K/V of kv_heads heads; a third MLP
  // matrix when gated; no biases without bias; RMSNorm has no bias).
  // Counted with the tables padded for `tp` (1: as a single rank holds them).
  int64_t parameter_count(int64_t tp = 1) const {
    int64_t per_block = 0;
    for (const auto& p : block_parameters(1)) per_block += p.elements;
    return (tie_embeddings ? 1 : 2) * padded_vocab_size(tp) * hidden +
           (learned_positions() ? seq_len * hidden : 0) + layers * per_block + norm_parameters();
  }
};

}  // namespace cmpi::models
