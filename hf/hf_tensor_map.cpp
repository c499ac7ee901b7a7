#include "hf/hf_tensor_map.h"

#include <stdexcept>

namespace cmpi::hf {
namespace {

// The row of our qkv that GPT-2's output column `column` is: column
// s·H + n·hd + d (part s of q/k/v, head n) is our row n·3·hd + s·hd + d.
int64_t our_qkv_row(int64_t column, int64_t hidden, int64_t heads) {
  const int64_t hd = hidden / heads;
  const int64_t part = column / hidden, head = (column % hidden) / hd, d = column % hd;
  return head * 3 * hd + part * hd + d;
}

// The permuting conversions, one map for both directions: the index in our
// flat tensor of the value at `hf_index` of Hugging Face's. kTranspose: HF's
// [cols, rows] element (j, i) is our (i, j); kGpt2Qkv: HF's Conv1D [H, 3H]
// element (i, c) is our (our_qkv_row(c), i); kGpt2QkvBias: HF's c is our
// our_qkv_row(c).
size_t our_index(const TensorMapping& m, size_t hf_index, int64_t heads) {
  const int64_t k = int64_t(hf_index);
  switch (m.conversion) {
    case Conversion::kTranspose: {
      const int64_t rows = m.our_shape[0], cols = m.our_shape[1];
      return size_t((k % rows) * cols + k / rows);
    }
    case Conversion::kGpt2Qkv: {
      const int64_t three_h = m.our_shape[0], h = m.our_shape[1];
      return size_t(our_qkv_row(k % three_h, h, heads) * h + k / three_h);
    }
    case Conversion::kGpt2QkvBias:
      return size_t(our_qkv_row(k, m.our_shape[0] / 3, heads));
    case Conversion::kCopy:
    case Conversion::kLeadingRows:
      break;
  }
  throw std::logic_error("our_index: not a permuting conversion");
}

}  // namespace

std::vector<TensorMapping> tensor_mappings(HfArchitecture architecture, const models::GptOptions& o,
                                           int64_t position_rows) {
  const int64_t v = o.vocab_size, h = o.hidden, r = o.mlp_ratio * o.hidden;
  const bool neox = architecture == HfArchitecture::kGptNeoX;
  std::vector<TensorMapping> out;
  const auto add = [&](std::string ours, std::string theirs, std::vector<int64_t> shape,
                       Conversion conversion = Conversion::kCopy) {
    std::vector<int64_t> their_shape = shape;
    if (conversion == Conversion::kTranspose || conversion == Conversion::kGpt2Qkv)
      std::swap(their_shape[0], their_shape[1]);
    out.push_back({std::move(ours), std::move(theirs), std::move(shape), std::move(their_shape),
                   conversion, false});
  };
  const std::string top = neox ? "gpt_neox." : "transformer.";
  add("token_embedding.weight", top + (neox ? "embed_in.weight" : "wte.weight"), {v, h});
  if (!neox) {
    add("position_embedding.weight", top + "wpe.weight", {o.seq_len, h}, Conversion::kLeadingRows);
    out.back().their_shape[0] = position_rows > 0 ? position_rows : o.seq_len;
  }
  const Conversion linear = neox ? Conversion::kCopy : Conversion::kTranspose;
  for (int64_t i = 0; i < o.layers; ++i) {
    const std::string ours = "block" + std::to_string(i) + ".";
    const std::string theirs = top + (neox ? "layers." : "h.") + std::to_string(i) + ".";
    const std::string ln1 = theirs + (neox ? "input_layernorm." : "ln_1.");
    const std::string ln2 = theirs + (neox ? "post_attention_layernorm." : "ln_2.");
    const std::string qkv = theirs + (neox ? "attention.query_key_value." : "attn.c_attn.");
    const std::string attn_out = theirs + (neox ? "attention.dense." : "attn.c_proj.");
    const std::string fc_in = theirs + (neox ? "mlp.dense_h_to_4h." : "mlp.c_fc.");
    const std::string fc_out = theirs + (neox ? "mlp.dense_4h_to_h." : "mlp.c_proj.");
    // In our registration order (models/transformer_block.cpp, attention.cpp).
    add(ours + "ln1.weight", ln1 + "weight", {h});
    add(ours + "ln1.bias", ln1 + "bias", {h});
    add(ours + "attention.qkv.weight", qkv + "weight", {3 * h, h},
        neox ? Conversion::kCopy : Conversion::kGpt2Qkv);
    add(ours + "attention.qkv.bias", qkv + "bias", {3 * h},
        neox ? Conversion::kCopy : Conversion::kGpt2QkvBias);
    add(ours + "attention.out.weight", attn_out + "weight", {h, h}, linear);
    add(ours + "attention.out.bias", attn_out + "bias", {h});
    add(ours + "ln2.weight", ln2 + "weight", {h});
    add(ours + "ln2.bias", ln2 + "bias", {h});
    add(ours + "fc_in.weight", fc_in + "weight", {r, h}, linear);
    add(ours + "fc_in.bias", fc_in + "bias", {r});
    add(ours + "fc_out.weight", fc_out + "weight", {h, r}, linear);
    add(ours + "fc_out.bias", fc_out + "bias", {h});
  }
  add("final_norm.weight", top + (neox ? "final_layer_norm.weight" : "ln_f.weight"), {h});
  add("final_norm.bias", top + (neox ? "final_layer_norm.bias" : "ln_f.bias"), {h});
  if (neox && !o.tie_embeddings) add("output_head.weight", "embed_out.weight", {v, h});
  if (neox && o.tie_embeddings) {
    add("token_embedding.weight", "embed_out.weight", {v, h});
    out.back().export_only = true;
  }
  return out;
}

std::vector<float> to_hf(const TensorMapping& m, const std::vector<float>& ours, int64_t heads) {
  if (m.conversion == Conversion::kCopy || m.conversion == Conversion::kLeadingRows)
    return ours;  // kLeadingRows: exported with n_positions = seq_len
  std::vector<float> out(ours.size());
  for (size_t k = 0; k < out.size(); ++k) out[k] = ours[our_index(m, k, heads)];
  return out;
}

std::vector<float> from_hf(const TensorMapping& m, const std::vector<float>& theirs,
                           int64_t heads) {
  if (m.conversion == Conversion::kCopy) return theirs;
  if (m.conversion == Conversion::kLeadingRows) {
    const size_t count = size_t(m.our_shape[0] * m.our_shape[1]);
    return std::vector<float>(theirs.begin(), theirs.begin() + std::ptrdiff_t(count));
  }
  std::vector<float> out(theirs.size());
  for (size_t k = 0; k < theirs.size(); ++k) out[our_index(m, k, heads)] = theirs[k];
  return out;
}

}  // namespace cmpi::hf
