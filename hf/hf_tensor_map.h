// Which Hugging Face tensor each of this project's GPT parameters is, and how
// the values move between the two layouts.
//
//   ours (Linear weights [out, in])       GPT-NeoX                        GPT-2
//   token_embedding.weight [V, H]         gpt_neox.embed_in.weight        transformer.wte.weight
//   position_embedding.weight [T, H]      -                               transformer.wpe.weight
//   block<i>.ln1 / ln2                    gpt_neox.layers.<i>.            transformer.h.<i>.
//                                         input_layernorm /               ln_1 / ln_2
//                                         post_attention_layernorm
//   block<i>.attention.qkv [3H, H]        attention.query_key_value       attn.c_attn [H, 3H]
//   block<i>.attention.out [H, H]         attention.dense                 attn.c_proj (transposed)
//   block<i>.fc_in [rH, H]                mlp.dense_h_to_4h               mlp.c_fc (transposed)
//   block<i>.fc_out [H, rH]               mlp.dense_4h_to_h               mlp.c_proj (transposed)
//   final_norm                            gpt_neox.final_layer_norm       transformer.ln_f
//   output_head.weight [V, H] (untied)    embed_out.weight                - (tied to wte)
//
//   ours                                  Llama (model.)
//   token_embedding.weight                embed_tokens.weight
//   block<i>.ln1 / ln2 (RMSNorm weight)   layers.<i>.input_layernorm / post_attention_layernorm
//   block<i>.attention.qkv [(n+2k)d, H]   self_attn.q_proj [n·d, H], k_proj, v_proj [k·d, H]
//   block<i>.attention.out                self_attn.o_proj
//   block<i>.fc_gate / fc_in / fc_out     mlp.gate_proj / up_proj / down_proj
//   final_norm.weight                     norm.weight
//   output_head.weight (untied)           lm_head.weight (top level)
//
// Llama's q, k and v are three tensors; ours is one fused tensor whose rows
// run by key/value group, [q of the group's heads; k; v] ([k, n/k + 2, d];
// models/attention.h): three mappings share our name, each the rows of one
// part (kLlamaQ/K/V), and an import fuses them back (from_hf_parts).
//
// Our fused qkv rows run head by head, [q; k; v] of head 0, then of head 1
// ([heads, 3, head_dim]), which is GPT-NeoX's query_key_value layout as it
// is: a copy. GPT-2's Conv1D stores weights [in, out] (transposed), and its
// c_attn's outputs are [q | k | v], each split by heads ([3, heads,
// head_dim]): the qkv conversion regroups the rows and transposes. A tied
// GPT-NeoX also gets embed_out.weight, a copy of the embedding, on export.
// Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hf/hf_model_config.h"
#include "models/gpt_options.h"

namespace cmpi::hf {

enum class Conversion {
  kCopy,
  kTranspose,    // 2-D [out, in] <-> [in, out]
  kGpt2Qkv,      // weight: rows [heads, 3, hd] <-> columns [3, heads, hd], transposed
  kGpt2QkvBias,  // bias: [heads, 3, hd] <-> [3, heads, hd]
  kLeadingRows,  // theirs has at least our rows; ours are its first ones (GPT-2's wpe)
  kLlamaQ,       // weight: the q rows of our fused qkv, query heads in order
  kLlamaK,       // the k rows, key/value heads in order
  kLlamaV,       // the v rows
};

struct TensorMapping {
  std::string ours, theirs;
  std::vector<int64_t> our_shape, their_shape;
  Conversion conversion = Conversion::kCopy;
  bool export_only = false;  // a tied NeoX's embed_out: written, never read
  int64_t group = 1;         // kLlamaQ/K/V: query heads per key/value head
  // A vocabulary table: our tensor may hold padding rows past our_shape[0]
  // (model.vocab_multiple), which never leave the project.
  bool vocabulary_rows = false;
};

// Every parameter of `options`' whole model, ours in registration order
// (Llama's qkv as three parts in a row).
// `position_rows`: GPT-2's stored position rows (n_positions; 0: seq_len).
std::vector<TensorMapping> tensor_mappings(HfArchitecture architecture,
                                           const models::GptOptions& options,
                                           int64_t position_rows = 0);

// Our global tensor (row-major, our_shape) in Hugging Face's layout.
std::vector<float> to_hf(const TensorMapping& mapping, const std::vector<float>& ours,
                         int64_t heads);
// Hugging Face's tensor (their_shape) in our layout.
std::vector<float> from_hf(const TensorMapping& mapping, const std::vector<float>& theirs,
                           int64_t heads);
// Our tensor from the Hugging Face tensors of all its parts (Llama's q, k, v),
// `theirs[i]` of `parts[i]`.
std::vector<float> from_hf_parts(const std::vector<TensorMapping>& parts,
                                 const std::vector<std::vector<float>>& theirs, int64_t heads);

}  // namespace cmpi::hf
