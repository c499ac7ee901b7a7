#!/usr/bin/env python3
"""An independent reader of a Hugging Face model directory (config.json +
model.safetensors), in plain PyTorch and without the transformers package,
written from the published model definitions of GPT-NeoX (GPTNeoXForCausalLM),
GPT-2 (GPT2LMHeadModel) and Llama (LlamaForCausalLM, the Llama 2/3 papers). It loads the tensors by Hugging Face's names and
layouts, runs the batch cmpi-train dumped (--dump-tensors DIR:
forward_tokens.i64) and checks the logits cmpi-train computed
(forward_logits.f32, forward_loss.txt) against its own.

What the directory must say, and how it is read:
  * model_type gpt_neox: gpt_neox.embed_in.weight [V, H]; per layer i
    gpt_neox.layers.i.{input_layernorm, post_attention_layernorm}.{weight, bias},
    attention.query_key_value.{weight [3H, H], bias} whose outputs, viewed
    [heads, 3 * head_dim], are each head's q, k, v; attention.dense, and
    mlp.dense_h_to_4h / dense_4h_to_h (torch Linear, [out, in]);
    gpt_neox.final_layer_norm; embed_out.weight [V, H] (untied) or embed_in's
    (tie_word_embeddings). Rotary on the first int(head_dim * rotary_pct)
    dimensions of q and k, inv_freq = 1 / base^(arange(0, d, 2) / d), cos/sin
    of [freqs, freqs], x * cos + rotate_half(x) * sin with
    rotate_half([x1, x2]) = [-x2, x1]. Block: use_parallel_residual
    x + attn(ln1(x)) + mlp(ln2(x)), else h = x + attn(ln1(x)); h + mlp(ln2(h)).
  * model_type gpt2: transformer.{wte, wpe}.weight; per layer
    transformer.h.i.{ln_1, ln_2}, attn.c_attn (Conv1D: weight [in, out], y = x W + b;
    outputs [q | k | v], each split into heads), attn.c_proj, mlp.c_fc, mlp.c_proj
    (Conv1D), transformer.ln_f; logits against wte (tied). Sequential blocks.
  * model_type llama: model.embed_tokens.weight; per layer model.layers.i.
    input_layernorm / post_attention_layernorm (RMSNorm: x / sqrt(mean(x^2) +
    rms_norm_eps) * weight), self_attn.{q,k,v,o}_proj (no biases; k and v of
    num_key_value_heads heads, each shared by num_attention_heads /
    num_key_value_heads query heads in order), rotary over the whole head
    (rotate_half, rope_theta; rope_scaling llama3 rescales inv_freq:
    wavelengths above original/low_freq_factor divided by factor, below
    original/high_freq_factor kept, between blended), mlp.down_proj(silu(
    gate_proj(x)) * up_proj(x)); sequential blocks; model.norm; lm_head.weight
    or embed_tokens (tie_word_embeddings).
  * Attention scaled by 1 / sqrt(head_dim), causal; LayerNorm eps from
    layer_norm_eps / layer_norm_epsilon; activation from hidden_act /
    activation_function: gelu (erf) or gelu_new / gelu_fast /
    gelu_pytorch_tanh (tanh approximation).
Every tensor in the file must be used (buffers such as attention masks
excepted), and every one the architecture needs must be there.

Exit status: 0 when logits and loss agree within the tolerances, 1 otherwise,
2 on malformed input.
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import torch

DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64}


def read_safetensors(path):
    """{name: float32 tensor} of a .safetensors file: u64 little-endian header
    length N, N bytes of JSON {name: {dtype, shape, data_offsets}}, the data."""
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        raw = data[base + begin:base + end]
        if entry["dtype"] == "BF16":
            values = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            values = np.frombuffer(raw, dtype=np.dtype(DTYPES[entry["dtype"]]).newbyteorder("<"))
        tensors[name] = torch.from_numpy(values.astype(np.float32)).view(entry["shape"])
    return tensors


def read_forward_dump(dump_dir, vocab):
    """The batch cmpi-train's --dump-tensors wrote: (inputs, targets, logits
    [sequences, t, vocab], loss) from forward_tokens.i64 (each sequence t + 1
    tokens), forward_logits.f32 and forward_loss.txt."""
    expected = read_tensor_file(os.path.join(dump_dir, "forward_logits.f32"))
    batch = torch.from_numpy(np.fromfile(os.path.join(dump_dir, "forward_tokens.i64"), dtype="<i8"))
    rows = expected.numel() // vocab
    sequences = batch.numel() - rows
    if rows * vocab != expected.numel() or sequences <= 0 or rows % sequences != 0:
        sys.exit("forward_logits.f32 and forward_tokens.i64 do not describe one batch of this vocabulary")
    t = rows // sequences
    batch = batch.view(sequences, t + 1)
    with open(os.path.join(dump_dir, "forward_loss.txt")) as f:
        loss = float(f.read())
    return batch[:, :t], batch[:, 1:], expected.reshape(sequences, t, vocab), loss


def read_tensor_file(path):
    """cmpi-train's tensor file (io/tensor_file.h): "CMPITNSR", u32 version,
    u32 dtype (1 = float32), u32 ndim, i64 dims, values."""
    data = open(path, "rb").read()
    if data[:8] != b"CMPITNSR":
        sys.exit(f"{path}: not a tensor file")
    ndim = struct.unpack("<I", data[16:20])[0]
    dims = struct.unpack(f"<{ndim}q", data[20:20 + 8 * ndim])
    return torch.from_numpy(np.frombuffer(data, dtype="<f4", offset=20 + 8 * ndim).copy()).view(dims)


class Weights:
    def __init__(self, tensors):
        self.tensors, self.used = tensors, set()

    def __getitem__(self, name):
        if name not in self.tensors:
            sys.exit(f"model.safetensors has no tensor {name}")
        self.used.add(name)
        return self.tensors[name]

    def check_all_used(self):
        # Buffers older exports carry (masks, rotary inv_freq) are not weights.
        buffers = (".attn.bias", ".attn.masked_bias", ".attention.bias", ".attention.masked_bias",
                   ".rotary_emb.inv_freq")
        unused = sorted(n for n in set(self.tensors) - self.used if not n.endswith(buffers))
        if unused:
            sys.exit(f"tensors this architecture does not use: {unused}")


def activation(name):
    if name == "gelu":
        return lambda x: 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))
    if name in ("gelu_new", "gelu_fast", "gelu_pytorch_tanh"):
        return lambda x: 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))
    sys.exit(f"activation {name} is not one this reference implements")


def layer_norm(x, w, prefix, eps):
    mean = x.mean(-1, keepdim=True)
    var = (x - mean).pow(2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * w[prefix + "weight"] + w[prefix + "bias"]


def causal_attention(q, k, v):
    """q, k, v [B, heads, T, hd] -> [B, T, heads * hd]."""
    t, hd = q.shape[-2], q.shape[-1]
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
    scores = scores.masked_fill(~torch.tril(torch.ones(t, t, dtype=torch.bool)), float("-inf"))
    context = torch.softmax(scores, dim=-1) @ v
    b = context.shape[0]
    return context.permute(0, 2, 1, 3).reshape(b, t, -1)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat([-x2, x1], dim=-1)


def neox_logits(tokens, w, c):
    heads, hidden = c["num_attention_heads"], c["hidden_size"]
    hd = hidden // heads
    dims = int(hd * c.get("rotary_pct", c.get("partial_rotary_factor", 0.25)))
    base = c.get("rotary_emb_base", c.get("rope_theta", 10000))
    eps = c.get("layer_norm_eps", 1e-5)
    act = activation(c.get("hidden_act", "gelu"))
    b, t = tokens.shape
    # In float32, as Hugging Face's GPTNeoXRotaryEmbedding computes them
    # (cmpi-train computes the angles in double and rounds cos/sin).
    inv_freq = 1.0 / (base ** (torch.arange(0, dims, 2, dtype=torch.int64).float() / dims))
    freqs = torch.outer(torch.arange(t, dtype=torch.float32), inv_freq)
    emb = torch.cat([freqs, freqs], dim=-1)
    cos, sin = emb.cos(), emb.sin()

    def rotary(x):
        x_rot, x_pass = x[..., :dims], x[..., dims:]
        return torch.cat([x_rot * cos + rotate_half(x_rot) * sin, x_pass], dim=-1)

    x = w["gpt_neox.embed_in.weight"][tokens]
    for i in range(c["num_hidden_layers"]):
        p = f"gpt_neox.layers.{i}."
        ln1 = layer_norm(x, w, p + "input_layernorm.", eps)
        qkv = ln1 @ w[p + "attention.query_key_value.weight"].t() + w[p + "attention.query_key_value.bias"]
        qkv = qkv.view(b, t, heads, 3 * hd).permute(0, 2, 1, 3)
        q, k, v = qkv[..., :hd], qkv[..., hd:2 * hd], qkv[..., 2 * hd:]
        attn = causal_attention(rotary(q), rotary(k), v)
        attn = attn @ w[p + "attention.dense.weight"].t() + w[p + "attention.dense.bias"]

        def mlp(h):
            inner = act(h @ w[p + "mlp.dense_h_to_4h.weight"].t() + w[p + "mlp.dense_h_to_4h.bias"])
            return inner @ w[p + "mlp.dense_4h_to_h.weight"].t() + w[p + "mlp.dense_4h_to_h.bias"]

        if c.get("use_parallel_residual", True):
            x = x + attn + mlp(layer_norm(x, w, p + "post_attention_layernorm.", eps))
        else:
            h = x + attn
            x = h + mlp(layer_norm(h, w, p + "post_attention_layernorm.", eps))
    x = layer_norm(x, w, "gpt_neox.final_layer_norm.", eps)
    head = w["gpt_neox.embed_in.weight"] if c.get("tie_word_embeddings", False) else w["embed_out.weight"]
    if c.get("tie_word_embeddings", False) and "embed_out.weight" in w.tensors:
        w.used.add("embed_out.weight")
    return x @ head.t()


def llama_inv_freq(c, hd):
    rope = c.get("rope_parameters") or {}
    base = rope.get("rope_theta", c.get("rope_theta", 10000.0))
    inv_freq = 1.0 / (base ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    scaling = c.get("rope_scaling") or (rope if rope.get("rope_type") == "llama3" else None)
    if scaling and scaling.get("rope_type", scaling.get("type")) == "llama3":
        factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
        original = scaling["original_max_position_embeddings"]
        wavelength = 2 * math.pi / inv_freq
        smooth = (original / wavelength - low) / (high - low)
        blended = (1 - smooth) * inv_freq / factor + smooth * inv_freq
        inv_freq = torch.where(wavelength < original / high, inv_freq,
                               torch.where(wavelength > original / low, inv_freq / factor, blended))
    elif scaling and scaling.get("rope_type", scaling.get("type", "default")) != "default":
        sys.exit(f"rope scaling {scaling} is not one this reference implements")
    return inv_freq


def llama_logits(tokens, w, c):
    heads, hidden = c["num_attention_heads"], c["hidden_size"]
    kv_heads = c.get("num_key_value_heads", heads)
    hd = c.get("head_dim") or hidden // heads
    eps = c.get("rms_norm_eps", 1e-6)
    if c.get("hidden_act", "silu") != "silu":
        sys.exit(f"hidden_act {c.get('hidden_act')} is not Llama's silu")
    b, t = tokens.shape
    freqs = torch.outer(torch.arange(t, dtype=torch.float32), llama_inv_freq(c, hd))
    emb = torch.cat([freqs, freqs], dim=-1)
    cos, sin = emb.cos(), emb.sin()

    def rms_norm(x, name):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w[name]

    def split_heads(x, n):
        return x.view(b, t, n, hd).permute(0, 2, 1, 3)

    x = w["model.embed_tokens.weight"][tokens]
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = rms_norm(x, p + "input_layernorm.weight")
        q = split_heads(h @ w[p + "self_attn.q_proj.weight"].t(), heads)
        k = split_heads(h @ w[p + "self_attn.k_proj.weight"].t(), kv_heads)
        v = split_heads(h @ w[p + "self_attn.v_proj.weight"].t(), kv_heads)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        group = heads // kv_heads  # query head n reads key/value head n // group
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        x = x + causal_attention(q, k, v) @ w[p + "self_attn.o_proj.weight"].t()
        h = rms_norm(x, p + "post_attention_layernorm.weight")
        gate = h @ w[p + "mlp.gate_proj.weight"].t()
        up = h @ w[p + "mlp.up_proj.weight"].t()
        x = x + (gate * torch.sigmoid(gate) * up) @ w[p + "mlp.down_proj.weight"].t()
    x = rms_norm(x, "model.norm.weight")
    tied = c.get("tie_word_embeddings", False)
    head = w["model.embed_tokens.weight"] if tied else w["lm_head.weight"]
    return x @ head.t()


def gpt2_logits(tokens, w, c):
    heads, hidden = c["n_head"], c["n_embd"]
    hd = hidden // heads
    eps = c.get("layer_norm_epsilon", 1e-5)
    act = activation(c.get("activation_function", "gelu_new"))
    if not c.get("tie_word_embeddings", True):
        sys.exit("GPT2LMHeadModel ties lm_head to wte; tie_word_embeddings false is not GPT-2")
    b, t = tokens.shape
    x = w["transformer.wte.weight"][tokens] + w["transformer.wpe.weight"][:t]
    for i in range(c["n_layer"]):
        p = f"transformer.h.{i}."
        h = layer_norm(x, w, p + "ln_1.", eps)
        qkv = h @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]  # Conv1D: [in, out]
        q, k, v = (part.view(b, t, heads, hd).permute(0, 2, 1, 3) for part in qkv.split(hidden, dim=-1))
        attn = causal_attention(q, k, v) @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        x = x + attn
        h = layer_norm(x, w, p + "ln_2.", eps)
        inner = act(h @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"])
        x = x + inner @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
    x = layer_norm(x, w, "transformer.ln_f.", eps)
    return x @ w["transformer.wte.weight"].t()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model_dir", help="config.json + model.safetensors")
    parser.add_argument("dump_dir", help="cmpi-train --dump-tensors DIR")
    parser.add_argument("--expect-type", choices=["gpt_neox", "gpt2", "llama"], required=True)
    parser.add_argument("--logits-tolerance", type=float, default=1e-5, help="max |difference|")
    parser.add_argument("--loss-tolerance", type=float, default=1e-5, help="relative")
    args = parser.parse_args()
    torch.set_num_threads(1)

    with open(os.path.join(args.model_dir, "config.json")) as f:
        config = json.load(f)
    if config.get("model_type") != args.expect_type:
        sys.exit(f"config.json: model_type {config.get('model_type')}, expected {args.expect_type}")
    weights = Weights(read_safetensors(os.path.join(args.model_dir, "model.safetensors")))
    vocab = config["vocab_size"]
    inputs, targets, expected, expected_loss = read_forward_dump(args.dump_dir, vocab)

    with torch.no_grad():
        forward = {"gpt_neox": neox_logits, "gpt2": gpt2_logits, "llama": llama_logits}[args.expect_type]
        logits = forward(inputs, weights, config)
    weights.check_all_used()
    log_probs = logits - torch.logsumexp(logits, dim=-1, keepdim=True)
    loss = -log_probs.gather(-1, targets.unsqueeze(-1)).mean().item()
    max_abs = (logits - expected).abs().max().item()
    loss_rel = abs(loss - expected_loss) / abs(loss)
    print(f"{args.expect_type} from {args.model_dir}: logits {list(expected.shape)} max |diff| "
          f"{max_abs:.3e} (largest |logit| {expected.abs().max().item():.3f}); loss reference "
          f"{loss:.9f}, cmpi-train {expected_loss:.9f}, rel diff {loss_rel:.3e}")
    ok = max_abs <= args.logits_tolerance and loss_rel <= args.loss_tolerance
    if not ok:
        print(f"FAIL: tolerances logits {args.logits_tolerance}, loss {args.loss_tolerance}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
