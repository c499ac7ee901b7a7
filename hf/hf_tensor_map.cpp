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
    case Conversion::kLlamaQ:
    case Conversion::kLlamaK:
    case Conversion::kLlamaV: {
      // Their row R of part s; ours runs [kv head, (group q rows, k, v), d].
      const int64_t h = m.our_shape[1], d = h / heads, g = m.group;
      const int64_t row = k / h, col = k % h;
      int64_t kv = 0, within = 0;  // our row = (kv·(g+2)) · d + within
      if (m.conversion == Conversion::kLlamaQ) {
        kv = row / (g * d);
        within = row % (g * d);
      } else {
        kv = row / d;
        within = (m.conversion == Conversion::kLlamaK ? g : g + 1) * d + row % d;
      }
      return size_t((kv * (g + 2) * d + within) * h + col);
    }
    case Conversion::kCopy:
    case Conversion::kLeadingRows:
      break;
  }
  throw std::logic_error("our_index: not a permuting conversion");
}

}  // namespace

namespace {

std::vector<TensorMapping> llama_mappings(const models::GptOptions& o) {
  const int64_t v = o.vocab_size, h = o.hidden, inner = o.mlp_width(), d = o.head_dim();
  const int64_t kv = o.kv_head_count(), qkv_rows = (o.heads + 2 * kv) * d;
  std::vector<TensorMapping> out;
  const auto add = [&](std::string ours, std::string theirs, std::vector<int64_t> shape) {
    out.push_back({std::move(ours), std::move(theirs), shape, shape, Conversion::kCopy, false});
  };
  add("token_embedding.weight", "model.embed_tokens.weight", {v, h});
  for (int64_t i = 0; i < o.layers; ++i) {
    const std::string ours = "block" + std::to_string(i) + ".";
    const std::string theirs = "model.layers." + std::to_string(i) + ".";
    add(ours + "ln1.weight", theirs + "input_layernorm.weight", {h});
    const std::pair<Conversion, std::pair<const char*, int64_t>> parts[] = {
        {Conversion::kLlamaQ, {"q_proj", o.heads * d}},
        {Conversion::kLlamaK, {"k_proj", kv * d}},
        {Conversion::kLlamaV, {"v_proj", kv * d}}};
    for (const auto& [conversion, part] : parts) {
      out.push_back({ours + "attention.qkv.weight",
                     theirs + "self_attn." + part.first + ".weight",
                     {qkv_rows, h},
                     {part.second, h},
                     conversion,
                     false,
                     o.query_group()});
    }
    add(ours + "attention.out.weight", theirs + "self_attn.o_proj.weight", {h, h});
    add(ours + "ln2.weight", theirs + "post_attention_layernorm.weight", {h});
    add(ours + "fc_gate.weight", theirs + "mlp.gate_proj.weight", {inner, h});
    add(ours + "fc_in.weight", theirs + "mlp.up_proj.weight", {inner, h});
    add(ours + "fc_out.weight", theirs + "mlp.down_proj.weight", {h, inner});
  }
  add("final_norm.weight", "model.norm.weight", {h});
  if (!o.tie_embeddings) add("output_head.weight", "lm_head.weight", {v, h});
  return out;
}

std::vector<TensorMapping> gpt_mappings(HfArchitecture architecture, const models::GptOptions& o,
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

}  // namespace

std::vector<TensorMapping> tensor_mappings(HfArchitecture architecture, const models::GptOptions& o,
                                           int64_t position_rows) {
  auto out = architecture == HfArchitecture::kLlama ? llama_mappings(o)
                                                    : gpt_mappings(architecture, o, position_rows);
  for (auto& m : out)
    m.vocabulary_rows = m.ours == "token_embedding.weight" || m.ours == "output_head.weight";
  return out;
}

std::vector<float> to_hf(const TensorMapping& m, const std::vector<float>& ours, int64_t heads) {
  if (m.conversion == Conversion::kCopy || m.conversion == Conversion::kLeadingRows)
    return ours;  // kLeadingRows: exported with n_positions = seq_len
  int64_t count = 1;
  for (const int64_t extent : m.their_shape) count *= extent;
  std::vector<float> out(static_cast<size_t>(count));
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

std::vector<float> from_hf_parts(const std::vector<TensorMapping>& parts,
                                 const std::vector<std::vector<float>>& theirs, int64_t heads) {
  if (parts.size() == 1) return from_hf(parts[0], theirs.at(0), heads);
  if (parts.empty() || theirs.size() != parts.size())
    throw std::logic_error("from_hf_parts: one tensor per part");
  int64_t count = 1;
  for (const int64_t extent : parts[0].our_shape) count *= extent;
  std::vector<float> out(static_cast<size_t>(count));
  for (size_t p = 0; p < parts.size(); ++p)
    for (size_t k = 0; k < theirs[p].size(); ++k) out[our_index(parts[p], k, heads)] = theirs[p][k];
  return out;
}

}  // namespace cmpi::hf
