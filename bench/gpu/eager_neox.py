#!/usr/bin/env python3
"""PyTorch eager peer of a one-rank cmpi-train GPU run: tokens/s and MFU of the same GPT-NeoX shape.

The model is the one cmpi-train trains for a config (models/gpt.cpp with GPT-NeoX's switches):
token embedding, pre-LN blocks with the parallel residual (x + attn(ln1(x)) + mlp(ln2(x))), one
fused qkv projection, rotary positions on rotary_pct of each head's dimensions (GPT-NeoX's
half-split convention), causal scaled-dot-product attention (torch's fused kernel, as
cmpi-train's model.attention_backend auto takes on CUDA), a 4x MLP with the tanh GeLU, final
LayerNorm, an untied output head. Float32 parameters and AdamW state (the masters), forward and
backward under bf16 autocast (16-bit products with float32 accumulation), torch.optim.AdamW with
its default multi-tensor (foreach) step, gradient clipping at 1.0.

What it reports is what cmpi-train's metrics.jsonl reports: tokens per second over the timed
steps (the batch on the device before the clock starts; a step ends when the device has
finished it) and MFU = tokens/s x the model's training FLOPs per token / the peak, with the
FLOP count of plan/model_flops.h (2 x matmul weights + 4 x seq x hidden per layer, x 3 for
training; the output head's padded rows counted).

Usage: eager_neox.py --config RESOLVED.yaml --steps N --warmup W --peak FLOPS [--out FILE.json]
(RESOLVED.yaml: cmpi-train's --print-config of the same run).
"""

import argparse
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def load_config(path):
    import yaml

    with open(path) as f:
        return yaml.safe_load(f)


def padded_vocab(m, tp=1):
    multiple = m.get("vocab_multiple", 1) * tp
    return (m["vocab_size"] + multiple - 1) // multiple * multiple


def training_flops_per_token(m):
    """plan/model_flops.h for a multi-head, ungated GPT on one rank."""
    h, layers, seq = m["hidden"], m["layers"], m["seq_len"]
    inner = m.get("mlp_ratio", 4) * h
    per_layer = 2 * (3 * h * h + h * h + 2 * h * inner) + 4 * seq * h
    head = 2 * h * padded_vocab(m)
    return 3 * (layers * per_layer + head)


class Rotary:
    def __init__(self, head_dim, pct, base, positions, device):
        self.dims = int(head_dim * pct) // 2 * 2
        half = self.dims // 2
        inverse = base ** (-2.0 * torch.arange(half, dtype=torch.float64) / self.dims)
        angles = torch.outer(torch.arange(positions, dtype=torch.float64), inverse)
        self.cos = angles.cos().float().to(device)
        self.sin = angles.sin().float().to(device)

    def apply(self, x):
        t, half = x.size(-2), self.dims // 2
        cos, sin = self.cos[:t], self.sin[:t]
        first, second, rest = x[..., :half], x[..., half:self.dims], x[..., self.dims:]
        return torch.cat([first * cos - second * sin, second * cos + first * sin, rest], -1)


class Block(nn.Module):
    def __init__(self, m, rotary):
        super().__init__()
        h = m["hidden"]
        self.heads = m["heads"]
        self.head_dim = h // self.heads
        self.rotary = rotary
        self.ln1 = nn.LayerNorm(h)
        self.ln2 = nn.LayerNorm(h)
        self.qkv = nn.Linear(h, 3 * h)
        self.out = nn.Linear(h, h)
        self.fc_in = nn.Linear(h, m.get("mlp_ratio", 4) * h)
        self.fc_out = nn.Linear(m.get("mlp_ratio", 4) * h, h)

    def attention(self, x):
        b, t, _ = x.shape
        fused = self.qkv(x).view(b, t, self.heads, 3, self.head_dim)
        q, k, v = (fused.select(3, i).transpose(1, 2) for i in range(3))
        if self.rotary is not None:
            q, k = self.rotary.apply(q), self.rotary.apply(k)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, t, self.heads * self.head_dim))

    def forward(self, x):
        mlp = self.fc_out(F.gelu(self.fc_in(self.ln2(x)), approximate="tanh"))
        return x + self.attention(self.ln1(x)) + mlp


class NeoX(nn.Module):
    def __init__(self, m, device):
        super().__init__()
        h = m["hidden"]
        rotary = None
        if m.get("position", "learned") == "rotary":
            rotary = Rotary(h // m["heads"], m.get("rotary_pct", 0.25), m.get("rotary_base", 10000),
                            m["seq_len"], device)
        self.token_embedding = nn.Embedding(padded_vocab(m), h)
        self.blocks = nn.ModuleList(Block(m, rotary) for _ in range(m["layers"]))
        self.final_norm = nn.LayerNorm(h)
        self.output_head = nn.Linear(h, padded_vocab(m), bias=False)
        with torch.no_grad():
            for p in self.parameters():
                if p.dim() >= 2:
                    p.normal_(0.0, 0.02)

    def forward(self, tokens, targets):
        x = self.token_embedding(tokens)
        for block in self.blocks:
            x = block(x)
        logits = self.output_head(self.final_norm(x)).float()
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--peak", type=float, required=True, help="FLOP/s the MFU divides by")
    parser.add_argument("--out")
    parser.add_argument("--device", default="cuda", help="cuda; cpu for a smoke run of the script")
    args = parser.parse_args()
    config = load_config(args.config)
    m, t = config["model"], config["training"]
    device = torch.device(args.device)
    synchronize = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    torch.manual_seed(config["run"].get("seed", 1234))
    model = NeoX(m, device).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=t["lr"], betas=(t["beta1"], t["beta2"]),
                                  eps=t["eps"], weight_decay=t["weight_decay"])
    micro_batch, seq = t["micro_batch"], m["seq_len"]
    micro_batches = t["global_batch"] // micro_batch
    generator = torch.Generator(device=device).manual_seed(1)
    tokens_per_step = t["global_batch"] * seq
    times = []
    for step in range(args.warmup + args.steps):
        batches = [torch.randint(0, m["vocab_size"], (micro_batch, seq + 1), device=device,
                                 generator=generator) for _ in range(micro_batches)]
        synchronize()
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        for batch in batches:
            with torch.autocast(device.type, dtype=torch.bfloat16):
                loss = model(batch[:, :-1], batch[:, 1:]) / micro_batches
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), t.get("grad_clip", 1.0) or math.inf)
        optimizer.step()
        synchronize()
        if step >= args.warmup:
            times.append(time.perf_counter() - start)
    times.sort()
    median = times[len(times) // 2]
    tokens_per_s = tokens_per_step / median
    result = {
        "subject": "pytorch eager (bf16 autocast, fp32 masters, AdamW foreach, SDPA)",
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
        "parameters": sum(p.numel() for p in model.parameters()),
        "tokens_per_step": tokens_per_step,
        "step_ms_median": 1000 * median,
        "tokens_per_s": tokens_per_s,
        "mfu": tokens_per_s * training_flops_per_token(m) / args.peak,
        "peak_memory_bytes": torch.cuda.max_memory_allocated() if device.type == "cuda" else -1,
        "steps_timed": len(times),
    }
    print(json.dumps(result))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
