#!/usr/bin/env python3
"""An independent GPT in plain PyTorch, written from the published architectures,
that loads the weights cmpi-train dumped (--dump-tensors DIR: parameters.f32 and
parameters.txt) and checks cmpi-train's forward of the same batch
(forward_tokens.i64, forward_logits.f32, forward_loss.txt) against its own.

Architectures:
  * GPT-2 (Radford et al. 2019): learned position table added to the token
    embedding; pre-LayerNorm blocks h = x + attn(ln1(x)); h + mlp(ln2(h)); exact
    (erf) GeLU; final LayerNorm; logits against the token embedding (tied).
  * GPT-NeoX (Black et al. 2022, "GPT-NeoX-20B"): rotary position embeddings
    (Su et al. 2021) on the first rotary_pct of each head's dimensions, with
    GPT-NeoX's "rotate half" pairing (dimension i with i + d/2); the parallel
    residual x + attn(ln1(x)) + mlp(ln2(x)); the tanh approximation of GeLU;
    an untied output head.

Weight layout as cmpi-train names and stores it (Linear weights [out, in]):
  token_embedding.weight [V, H]; position_embedding.weight [T, H] (learned only);
  block<i>.ln1/ln2.{weight,bias} [H]; block<i>.attention.qkv.weight [3H, H] with
  its rows head by head, [q; k; v] of head 0 then of head 1, ... (GPT-NeoX's
  query_key_value layout); block<i>.attention.out.{weight [H, H], bias};
  block<i>.fc_in.{weight [rH, H], bias}; block<i>.fc_out.{weight [H, rH], bias};
  final_norm.{weight,bias}; output_head.weight [V, H] (untied only).

Exit status: 0 when logits and loss agree within the tolerances, 1 otherwise
(printing the largest differences), 2 on malformed input.
"""
import argparse
import math
import os
import sys

import numpy as np
import torch

LAYER_NORM_EPS = 1e-5  # torch.nn.LayerNorm's default, as cmpi-train's LayerNorms


def read_tensor_file(path):
    """The float32 values of a tensor file (io/tensor_file.h: "CMPITNSR", u32
    version 1, u32 dtype 1 = float32, u32 ndim, i64 dims[ndim], then the
    values), flattened; the shape is checked against the bytes."""
    data = open(path, "rb").read()
    if data[:8] != b"CMPITNSR":
        sys.exit(f"{path}: not a tensor file (no CMPITNSR header)")
    version, dtype, ndim = np.frombuffer(data, dtype="<u4", count=3, offset=8)
    if version != 1 or dtype != 1:
        sys.exit(f"{path}: tensor file version {version}, dtype {dtype}: expected 1 and 1 (float32)")
    dims = np.frombuffer(data, dtype="<i8", count=int(ndim), offset=20)
    values = np.frombuffer(data, dtype="<f4", offset=20 + 8 * int(ndim))
    if values.size != int(np.prod(dims)):
        sys.exit(f"{path}: shape {list(dims)} but {values.size} values")
    return values


def load_parameters(dump_dir):
    """{name: tensor} from parameters.txt (name and shape a line) and parameters.f32."""
    values = read_tensor_file(os.path.join(dump_dir, "parameters.f32"))
    params, offset = {}, 0
    with open(os.path.join(dump_dir, "parameters.txt")) as index:
        for line in index:
            fields = line.split()
            if not fields:
                continue
            name, shape = fields[0], [int(d) for d in fields[1:]]
            count = int(np.prod(shape))
            params[name] = torch.from_numpy(values[offset:offset + count].copy()).view(shape)
            offset += count
    if offset != values.size:
        sys.exit(f"parameters.f32 holds {values.size} floats, parameters.txt describes {offset}")
    return params


class Weights:
    """Hands out parameters by name and remembers which were used, so a dumped
    parameter the architecture does not expect (or one missing) is an error."""

    def __init__(self, params):
        self.params, self.used = params, set()

    def __getitem__(self, name):
        if name not in self.params:
            sys.exit(f"the dump has no parameter {name}")
        self.used.add(name)
        return self.params[name]

    def check_all_used(self):
        unused = sorted(set(self.params) - self.used)
        if unused:
            sys.exit(f"dumped parameters this architecture does not use: {unused}")


def gelu_exact(x):
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


def layer_norm(x, weight, bias):
    mean = x.mean(-1, keepdim=True)
    var = (x - mean).pow(2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + LAYER_NORM_EPS) * weight + bias


def linear(x, w, b=None):
    y = x @ w.t()
    return y if b is None else y + b


def rotary(x, dims, base):
    """GPT-NeoX's rotary embedding of x [B, heads, T, head_dim]: with
    inv_freq_j = base^(-2j/dims) (j < dims/2), freqs = positions x inv_freq,
    emb = [freqs, freqs]; the first `dims` dimensions become
    x * cos(emb) + rotate_half(x) * sin(emb), rotate_half([x1, x2]) = [-x2, x1];
    the rest pass."""
    t = x.shape[-2]
    inv_freq = 1.0 / (base ** (torch.arange(0, dims, 2, dtype=torch.float64) / dims))
    freqs = torch.outer(torch.arange(t, dtype=torch.float64), inv_freq)
    emb = torch.cat([freqs, freqs], dim=-1)
    cos, sin = emb.cos().float(), emb.sin().float()
    x_rot, x_pass = x[..., :dims], x[..., dims:]
    x1, x2 = x_rot[..., : dims // 2], x_rot[..., dims // 2:]
    rotated = x_rot * cos + torch.cat([-x2, x1], dim=-1) * sin
    return torch.cat([rotated, x_pass], dim=-1)


def attention(x, w, prefix, args):
    b, t, h = x.shape
    head_dim = h // args.heads
    qkv = linear(x, w[prefix + "qkv.weight"], w[prefix + "qkv.bias"])
    qkv = qkv.view(b, t, args.heads, 3 * head_dim).permute(0, 2, 1, 3)  # [B, heads, T, 3hd]
    q, k, v = qkv.split(head_dim, dim=-1)
    if args.position == "rotary":
        dims = int(head_dim * args.rotary_pct)
        q, k = rotary(q, dims, args.rotary_base), rotary(k, dims, args.rotary_base)
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(head_dim)
    causal = torch.tril(torch.ones(t, t, dtype=torch.bool))
    scores = scores.masked_fill(~causal, float("-inf"))
    context = torch.softmax(scores, dim=-1) @ v  # [B, heads, T, hd]
    context = context.permute(0, 2, 1, 3).reshape(b, t, h)
    return linear(context, w[prefix + "out.weight"], w[prefix + "out.bias"])


def mlp(x, w, prefix, args):
    act = gelu_tanh if args.activation == "gelu_tanh" else gelu_exact
    inner = act(linear(x, w[prefix + "fc_in.weight"], w[prefix + "fc_in.bias"]))
    return linear(inner, w[prefix + "fc_out.weight"], w[prefix + "fc_out.bias"])


def block(x, w, i, args):
    p = f"block{i}."
    ln1 = layer_norm(x, w[p + "ln1.weight"], w[p + "ln1.bias"])
    if args.parallel_residual:
        ln2 = layer_norm(x, w[p + "ln2.weight"], w[p + "ln2.bias"])
        return x + attention(ln1, w, p + "attention.", args) + mlp(ln2, w, p, args)
    h = x + attention(ln1, w, p + "attention.", args)
    return h + mlp(layer_norm(h, w[p + "ln2.weight"], w[p + "ln2.bias"]), w, p, args)


def logits_of(tokens, w, args):
    t = tokens.shape[1]
    x = w["token_embedding.weight"][tokens]
    if args.position == "learned":
        x = x + w["position_embedding.weight"][:t]
    for i in range(args.layers):
        x = block(x, w, i, args)
    x = layer_norm(x, w["final_norm.weight"], w["final_norm.bias"])
    head = w["token_embedding.weight"] if args.tied else w["output_head.weight"]
    return linear(x, head)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dump_dir")
    parser.add_argument("--layers", type=int, required=True)
    parser.add_argument("--heads", type=int, required=True)
    parser.add_argument("--position", choices=["learned", "rotary"], default="learned")
    parser.add_argument("--rotary-pct", type=float, default=0.25)
    parser.add_argument("--rotary-base", type=float, default=10000.0)
    parser.add_argument("--parallel-residual", action="store_true")
    parser.add_argument("--activation", choices=["gelu", "gelu_tanh"], default="gelu")
    parser.add_argument("--untied", dest="tied", action="store_false")
    parser.add_argument("--logits-tolerance", type=float, default=1e-5, help="max |difference|")
    parser.add_argument("--loss-tolerance", type=float, default=1e-5, help="relative")
    args = parser.parse_args()
    torch.set_num_threads(1)

    weights = Weights(load_parameters(args.dump_dir))
    expected = read_tensor_file(os.path.join(args.dump_dir, "forward_logits.f32"))
    batch = torch.from_numpy(np.fromfile(os.path.join(args.dump_dir, "forward_tokens.i64"),
                                         dtype="<i8"))
    vocab = weights.params["token_embedding.weight"].shape[0]
    # The batch is [B, T + 1] tokens (inputs and the targets one ahead), the
    # logits [B, T, vocab].
    rows = expected.size // vocab
    sequences = batch.numel() - rows
    if rows * vocab != expected.size or sequences <= 0 or rows % sequences != 0:
        sys.exit("forward_logits.f32 and forward_tokens.i64 do not describe one batch")
    t = rows // sequences
    batch = batch.view(sequences, t + 1)
    inputs, targets = batch[:, :t], batch[:, 1:]
    with open(os.path.join(args.dump_dir, "forward_loss.txt")) as f:
        expected_loss = float(f.read())
    expected = torch.from_numpy(expected.copy()).view(sequences, t, vocab)

    with torch.no_grad():
        logits = logits_of(inputs, weights, args)
    weights.check_all_used()
    log_probs = logits - torch.logsumexp(logits, dim=-1, keepdim=True)
    loss = -log_probs.gather(-1, targets.unsqueeze(-1)).mean().item()

    abs_diff = (logits - expected).abs()
    max_abs = abs_diff.max().item()
    max_rel = max_abs / expected.abs().max().item()  # against the largest logit
    loss_rel = abs(loss - expected_loss) / abs(loss)
    print(f"logits [{sequences}, {t}, {vocab}]: max |diff| {max_abs:.3e} "
          f"({max_rel:.3e} of the largest |logit|, {expected.abs().max().item():.3f}); loss reference {loss:.9f}, "
          f"cmpi-train {expected_loss:.9f}, rel diff {loss_rel:.3e}")
    ok = max_abs <= args.logits_tolerance and loss_rel <= args.loss_tolerance
    if not ok:
        where = np.unravel_index(abs_diff.argmax().item(), abs_diff.shape)
        print(f"FAIL: logits differ most at [sequence, position, token] {tuple(int(i) for i in where)}:"
              f" reference {logits[where].item():.7f}, cmpi-train {expected[where].item():.7f}"
              f" (tolerances: logits {args.logits_tolerance}, loss {args.loss_tolerance})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
