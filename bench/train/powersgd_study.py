#!/usr/bin/env python3
"""Why does rank-r PowerSGD with AdamW stall on the benchmark's task? A single-process study.

Simulates data-parallel training of the benchmark's GPT (bench/train/ddp_peer.py's model,
cmpi-train's initial weights, the same indexed Markov dataset, AdamW, LR schedule and clipping):
each step computes the W workers' gradients one after another, reduces them with a variant of
PowerSGD written as parallel/zero/powersgd_reducer.cpp does it (error feedback, P = M Q, sum,
Gram-Schmidt, Q = M^T P, sum, P Q^T, warm start, 1-D tensors raw), then clips and steps AdamW.
Variants change one thing at a time: rank, warm-up steps, error feedback, the embedding tables
raw, and AdamW's second moment frozen after the warm-up (1-bit Adam's remedy).

For each variant it prints the smoothed loss (mean of --window steps) every 25 steps and the step
at which it reaches L* = the uncompressed variant's smoothed loss at --target-step.

  python3 bench/train/powersgd_study.py --steps 150 --target-step 101 --device cuda
"""

import argparse
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import torch  # noqa: E402

import cmpi_init  # noqa: E402
from ddp_peer import Gpt, decays, lr_at  # noqa: E402
from indexed_data import IndexedTrainSource  # noqa: E402

MODEL = {"vocab_size": 1024, "seq_len": 128, "layers": 4, "hidden": 256, "heads": 8, "mlp_ratio": 4,
         "init_std": 0.02}
TRAIN = {"lr": 3e-3, "min_lr": 3e-4, "warmup_steps": 5, "weight_decay": 0.1, "beta1": 0.9, "beta2": 0.95,
         "eps": 1e-8, "grad_clip": 1.0}


def orthonormalize(p):
    """Orthonormal columns spanning p's (QR in double: the same span as the reducer's Gram-Schmidt;
    sign flips cancel in P Q^T)."""
    return torch.linalg.qr(p.double()).Q.float()


class PowerSgd:
    def __init__(self, names, shapes, rank, start, error_feedback, raw_embeddings, device, seed=1):
        self.rank, self.start, self.ef = rank, start, error_feedback
        self.low_rank, self.q, self.residual = {}, {}, {}
        gen = torch.Generator().manual_seed(seed)
        for name, shape in zip(names, shapes):
            if len(shape) < 2 or (raw_embeddings and (
                    ("embedding" in name or "output_head" in name) if raw_embeddings is True
                    else raw_embeddings in name)):
                continue
            rows, cols = shape[0], int(np.prod(shape[1:]))
            r = min(rank, rows, cols)
            if r * (rows + cols) >= rows * cols:
                continue
            self.low_rank[name] = r
            self.q[name] = (torch.rand(cols, r, generator=gen) * 2 - 1).to(device)
        self.step = 0

    def reduce(self, grads):
        """grads: {name: [worker tensors]} -> {name: summed (approximated) tensor}."""
        self.step += 1
        out = {}
        for name, gs in grads.items():
            if self.step <= self.start or name not in self.low_rank:
                out[name] = torch.stack(gs).sum(0)
                continue
            shape = gs[0].shape
            ms = [g.reshape(shape[0], -1) for g in gs]
            if self.ef:
                res = self.residual.setdefault(name, [torch.zeros_like(ms[0]) for _ in ms])
                ms = [m + e for m, e in zip(ms, res)]
            q = self.q[name]
            p = orthonormalize(sum(m @ q for m in ms))
            qs = [m.t() @ p for m in ms]
            if self.ef:
                self.residual[name] = [m - p @ qw.t() for m, qw in zip(ms, qs)]
            qsum = sum(qs)
            self.q[name] = qsum
            out[name] = (p @ qsum.t()).reshape(shape)
        return out


class AdamW:
    """torch.optim.AdamW's arithmetic, with the second moment optionally frozen after a step."""

    def __init__(self, params, decay, freeze_after=None):
        self.params, self.decay, self.freeze_after = params, decay, freeze_after
        self.m = {n: torch.zeros_like(p) for n, p in params.items()}
        self.v = {n: torch.zeros_like(p) for n, p in params.items()}
        self.t = 0

    @torch.no_grad()
    def step(self, grads, lr):
        self.t += 1
        b1, b2, eps, wd = TRAIN["beta1"], TRAIN["beta2"], TRAIN["eps"], TRAIN["weight_decay"]
        frozen = self.freeze_after is not None and self.t > self.freeze_after
        for n, p in self.params.items():
            g = grads[n]
            if self.decay[n]:
                p.mul_(1 - lr * wd)
            self.m[n].mul_(b1).add_(g, alpha=1 - b1)
            if not frozen:
                self.v[n].mul_(b2).addcmul_(g, g, value=1 - b2)
            t_v = min(self.t, self.freeze_after) if frozen else self.t
            denom = (self.v[n].sqrt() / math.sqrt(1 - b2 ** t_v)).add_(eps)
            p.addcdiv_(self.m[n], denom, value=-lr / (1 - b1 ** self.t))


def run(variant, args, source, device):
    torch.manual_seed(1234)
    model = Gpt(MODEL).to(device)
    if args.init == "cmpi":
        with torch.no_grad():
            for name, p in model.named_parameters():
                p.copy_(torch.from_numpy(cmpi_init.initial_tensor(cmpi_init.cmpi_name(name), tuple(p.shape),
                                                                  MODEL, 1234)))
    params = dict(model.named_parameters())
    names = list(params)
    psgd = None
    if variant.get("rank"):
        psgd = PowerSgd(names, [tuple(p.shape) for p in params.values()], variant["rank"],
                        variant.get("start", 5), variant.get("ef", True), variant.get("raw_emb", False), device)
    opt = AdamW(params, {n: decays(n) for n in names}, variant.get("freeze_v"))
    train = dict(TRAIN, steps=args.steps)
    W, micro = args.workers, args.global_batch // args.workers
    losses = []
    for step in range(args.steps):
        grads = {n: [] for n in names}
        total = 0.0
        for w in range(W):
            batch = torch.tensor(np.array([source(step, w * micro + b) for b in range(micro)]),
                                 dtype=torch.long, device=device)
            model.zero_grad(set_to_none=True)
            loss = model(batch[:, :-1], batch[:, 1:])
            (loss / W).backward()
            total += float(loss) / W
            for n in names:
                grads[n].append(params[n].grad.detach().clone())
        reduced = psgd.reduce(grads) if psgd else {n: torch.stack(g).sum(0) for n, g in grads.items()}
        norm = math.sqrt(sum(float(g.pow(2).sum()) for g in reduced.values()))
        clip = TRAIN["grad_clip"]
        if norm > clip:
            reduced = {n: g * (clip / (norm + 1e-6)) for n, g in reduced.items()}
        opt.step(reduced, lr_at(step, train))
        losses.append(total)
    return losses


def smoothed(losses, w):
    return [sum(losses[i - w + 1:i + 1]) / w if i + 1 >= w else None for i in range(len(losses))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--target-step", type=int, default=101)
    ap.add_argument("--window", type=int, default=5)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--global-batch", type=int, default=16)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--dataset", default="", help="PREFIX of an indexed dataset (default: write a Markov one)")
    ap.add_argument("--variants", default="all", help="comma list of variant names, or all")
    ap.add_argument("--init", choices=["cmpi", "torch"], default="cmpi",
                    help="cmpi-train's initial weights (cmpi_init.py) or torch's generator (seed 1234)")
    ap.add_argument("--data", choices=["indexed", "markov"], default="indexed",
                    help="the benchmark's indexed Markov dataset, or the Markov source directly")
    args = ap.parse_args()
    prefix = args.dataset
    if args.data == "markov":
        from markov_source import MarkovSource

        chain = MarkovSource(1024, 4, 1.0, 42)
        source = lambda step, i: chain.sample(step, i, MODEL["seq_len"] + 1)  # noqa: E731
    elif not prefix:
        prefix = os.path.join(os.environ.get("TMPDIR", "/tmp"), "powersgd_study_markov")
        if not os.path.exists(prefix + ".idx"):
            import subprocess

            subprocess.run([sys.executable, os.path.join(HERE, "make_markov_dataset.py"), "--prefix", prefix,
                            "--documents", "2048"], check=True)
    if args.data == "indexed":
        source = IndexedTrainSource({"paths": [prefix], "split": [1, 0], "seed": 42}, 128, args.global_batch,
                                    args.steps).sample
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    variants = {  # rank, warm-up (start), error feedback, raw embeddings, AdamW's v frozen after step
        "none": {},
        "r4": {"rank": 4},
        "r4raw": {"rank": 4, "raw_emb": True},
        "r4fz": {"rank": 4, "freeze_v": 5},
        "r4rawfz": {"rank": 4, "raw_emb": True, "freeze_v": 5},
        "r4noef": {"rank": 4, "ef": False},
        "r16": {"rank": 16},
        "r4s30": {"rank": 4, "start": 30},
        "r4s30fz": {"rank": 4, "start": 30, "freeze_v": 30},
        "r16raw": {"rank": 16, "raw_emb": True},
        "r4rawnoef": {"rank": 4, "raw_emb": True, "ef": False},
        "nonefz": {"freeze_v": 5},
        "r32": {"rank": 32},
        "r8raw": {"rank": 8, "raw_emb": True},
        "r4rawtok": {"rank": 4, "raw_emb": "token"},
        "r4rawpos": {"rank": 4, "raw_emb": "position"},
        "r4raws20": {"rank": 4, "raw_emb": True, "start": 20},
        "r4rawfz50": {"rank": 4, "raw_emb": True, "freeze_v": 50},
        "r2raw": {"rank": 2, "raw_emb": True},
        "r16raws10": {"rank": 16, "raw_emb": True, "start": 10},
    }
    chosen = list(variants) if args.variants == "all" else args.variants.split(",")
    print(f"device {args.device}, torch {torch.__version__}, {args.steps} steps, {args.workers} workers", flush=True)
    target = None
    for name in chosen:
        t0 = time.time()
        losses = run(variants[name], args, source, args.device)
        sm = smoothed(losses, args.window)
        if name == "none":
            target = sm[args.target_step - 1]
        reached = next((i + 1 for i, s in enumerate(sm) if s is not None and target is not None and s <= target),
                       None)
        marks = " ".join(f"{sm[i]:.3f}" for i in range(24, args.steps, 25))
        shown = f"{target:.3f}" if target is not None else "? (run 'none' first)"
        print(f"{name:28s} @25.. {marks} | final {losses[-1]:.3f} | L*={shown} reached at step "
              f"{reached if reached else 'never'} | {time.time() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
