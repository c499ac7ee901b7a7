#!/usr/bin/env python3
"""PyTorch DDP peer of cmpi-train: the same GPT, data, optimizer and schedule, on gloo.

One process per rank, started by mpirun (e.g. through scripts/emulated_cluster.sh run K 1 --):
OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE give rank and world size; the rendezvous (env://) is
node 0 of the emulated cluster (first line of $CMPI_EMULATED_CLUSTER_STATE/nodes, which
emulated_cluster.sh run exports) or --master-addr; gloo binds to --ifname (eth0 inside the
emulated nodes). Without mpirun it runs as a single rank on 127.0.0.1.

What it matches (read from cmpi-train's resolved config, --config, as written by
`cmpi-train --print-config`):
- model: models/gpt.{h,cpp}: token + learned position embeddings, pre-LN blocks (LayerNorm ->
  causal multi-head attention with one fused qkv projection laid out [heads, (q k v), head_dim]
  -> residual; LayerNorm -> Linear(h, mlp_ratio*h) -> exact GELU -> Linear -> residual), final
  LayerNorm, output head tied to the token embedding; N(0, init_std) weights, residual output
  projections scaled by 1/sqrt(2*layers), zero biases; the initial values are cmpi-train's own,
  bit for bit (bench/train/cmpi_init.py, a port of models/param_layout.cpp's counter-based
  generator keyed by run.seed and the parameter's name; --init torch draws from torch's
  generator instead, the same distributions);
- data: data.kind markov: bench/train/markov_source.py, a bit-exact port of
  data/markov_source.cpp; data.kind indexed (one dataset): bench/train/indexed_data.py, a port of
  the GPT sample index of data/indexed_token_source.cpp, checked against the index cache
  cmpi-train writes when it exists (summary.json "data_check"); either way rank r draws the same
  sequences as cmpi-train's dp rank r (micro-batch m: sequences (r*micro_batches + m)*micro_batch
  ...);
- optimizer: AdamW (decay on matrices and the token embedding only, as ParamInfo::weight_decay),
  linear warm-up then cosine to min_lr (trainer/lr_schedule.cpp), clipping by the global norm,
  gradients accumulated over micro-batches, averaged over ranks in 25 MiB buckets
  (parallel.dp_bucket_bytes);
- one torch thread per rank (training.threads).

Variants (--hook): none (DDP's allreduce), fp16 (fp16_compress_hook), powersgd (PowerSGD,
--powersgd-rank, plain allreduce until --powersgd-start). --eager: one rank, no process group and
no DDP wrapper, the plain PyTorch eager step (bench/train/compute_parity.py compares it with a
one-rank cmpi-train).

Writes, on rank 0, <out>/metrics.jsonl (one line per step: step, loss, lr, grad_norm,
tokens_per_s, step_ms, cpu_ms (the process's CPU time over the step), raw_bytes, wire_bytes,
as cmpi-train's) and <out>/summary.json.
The batch is drawn before a step's clock starts (the port of the sampler is Python).
"""

import argparse
import datetime
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

import cmpi_init  # noqa: E402
from indexed_data import IndexedTrainSource  # noqa: E402
from markov_source import MarkovSource  # noqa: E402


def load_config(path):
    import yaml

    with open(path) as f:
        return yaml.safe_load(f)


def parse_bytes(value):
    if isinstance(value, (int, float)):
        return int(value)
    s = str(value).strip()
    units = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "kB": 1000, "KB": 1000,
             "MB": 1000 ** 2, "GB": 1000 ** 3, "B": 1}
    for unit, scale in units.items():
        if s.endswith(unit):
            return int(float(s[: -len(unit)]) * scale)
    return int(s)


def parameter_count(m):
    """GptOptions::parameter_count (models/gpt_options.h)."""
    h, r = m["hidden"], m["mlp_ratio"]
    per_block = 4 * h + 3 * h * h + 3 * h + h * h + h + 2 * r * h * h + r * h + h
    tables = 1 if m.get("tie_embeddings", True) else 2
    return tables * m["vocab_size"] * h + m["seq_len"] * h + m["layers"] * per_block + 2 * h


class Attention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)

    def forward(self, x):
        b, t, _ = x.shape
        fused = self.qkv(x).view(b, t, self.heads, 3, self.head_dim)
        q, k, v = (fused.select(3, i).transpose(1, 2) for i in range(3))
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        future = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        weights = torch.softmax(scores.masked_fill(future, float("-inf")), -1)
        y = torch.matmul(weights, v).transpose(1, 2).reshape(b, t, self.heads * self.head_dim)
        return self.out(y)


class Block(nn.Module):
    def __init__(self, hidden, heads, mlp_ratio):
        super().__init__()
        self.ln1 = nn.LayerNorm(hidden)
        self.attention = Attention(hidden, heads)
        self.ln2 = nn.LayerNorm(hidden)
        self.fc_in = nn.Linear(hidden, mlp_ratio * hidden)
        self.fc_out = nn.Linear(mlp_ratio * hidden, hidden)

    def forward(self, x):
        h = x + self.attention(self.ln1(x))
        return h + self.fc_out(F.gelu(self.fc_in(self.ln2(h))))


class Gpt(nn.Module):
    def __init__(self, m):
        super().__init__()
        h = m["hidden"]
        self.token_embedding = nn.Embedding(m["vocab_size"], h)
        self.position_embedding = nn.Embedding(m["seq_len"], h)
        self.blocks = nn.ModuleList(Block(h, m["heads"], m["mlp_ratio"]) for _ in range(m["layers"]))
        self.final_norm = nn.LayerNorm(h)
        # model.tie_embeddings false: a head table of its own (GPT-NeoX).
        self.output_head = None if m.get("tie_embeddings", True) else nn.Linear(h, m["vocab_size"], bias=False)
        std = m["init_std"]
        residual_std = std / math.sqrt(2.0 * m["layers"])
        with torch.no_grad():
            for name, p in self.named_parameters():
                if name.endswith("ln1.weight") or name.endswith("ln2.weight") or name == "final_norm.weight":
                    p.fill_(1.0)
                elif name.endswith(".bias"):
                    p.zero_()
                elif name.endswith("attention.out.weight") or name.endswith("fc_out.weight"):
                    p.normal_(0.0, residual_std)
                else:  # token/position embeddings, output head, qkv.weight, fc_in.weight
                    p.normal_(0.0, std)

    def forward(self, tokens, targets):
        t = tokens.size(1)
        x = self.token_embedding(tokens) + self.position_embedding(torch.arange(t, device=tokens.device))
        for block in self.blocks:
            x = block(x)
        head = self.token_embedding.weight if self.output_head is None else self.output_head.weight
        logits = torch.matmul(self.final_norm(x), head.t())
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))


def decays(name):
    """ParamInfo::weight_decay of the same parameter in models/ (matrices + token table)."""
    return name == "token_embedding.weight" or name.endswith(
        ("qkv.weight", "attention.out.weight", "fc_in.weight", "fc_out.weight"))


def lr_at(step, t):
    """trainer/lr_schedule.cpp, step counted from 0."""
    peak, min_lr, warmup, total = t["lr"], t["min_lr"], t["warmup_steps"], t["steps"]
    if step < warmup:
        return peak * float(step + 1) / float(warmup)
    decay_steps = max(1, total - warmup - 1)
    progress = min(1.0, float(step - warmup) / float(decay_steps))
    return min_lr + 0.5 * (peak - min_lr) * (1.0 + math.cos(math.pi * progress))


def master_address(args):
    if args.master_addr:
        return args.master_addr
    state = os.environ.get("CMPI_EMULATED_CLUSTER_STATE")
    if state and os.path.exists(os.path.join(state, "nodes")):
        with open(os.path.join(state, "nodes")) as f:
            return f.readline().split()[0]
    return "127.0.0.1"


class ByteCounter:
    """Wraps a comm hook: raw bytes = the bucket's fp32 gradients; wire = what the hook sends."""

    def __init__(self, kind, powersgd_state=None):
        self.kind, self.state = kind, powersgd_state
        self.raw = self.wire = 0

    def wrap(self, hook):
        def counted(state, bucket):
            raw = bucket.buffer().numel() * 4
            self.raw += raw
            if self.kind == "fp16":
                self.wire += raw // 2
            elif self.kind == "powersgd":
                s = self.state
                before = s.total_numel_after_compression
                compressing = s.iter >= s.start_powerSGD_iter
                fut = hook(state, bucket)
                self.wire += (s.total_numel_after_compression - before) * 4 if compressing else raw
                return fut
            else:
                self.wire += raw
            return hook(state, bucket)

        return counted


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", required=True, help="cmpi-train's resolved config (--print-config)")
    ap.add_argument("--hook", choices=["none", "fp16", "powersgd"], default="none")
    ap.add_argument("--powersgd-rank", type=int, default=4)
    ap.add_argument("--powersgd-start", type=int, default=5,
                    help="PowerSGD's start_powerSGD_iter: plain allreduce before (>= 2)")
    ap.add_argument("--out", required=True, help="run directory (metrics.jsonl, summary.json)")
    ap.add_argument("--master-addr", default="")
    ap.add_argument("--master-port", type=int, default=29577)
    ap.add_argument("--ifname", default=None, help="GLOO_SOCKET_IFNAME (default: eth0 under the "
                    "emulated cluster, lo otherwise)")
    ap.add_argument("--expect-params", type=int, default=0,
                    help="fail unless the model has exactly this many parameters")
    ap.add_argument("--timeout-s", type=int, default=600)
    ap.add_argument("--init", choices=["cmpi", "torch"], default="cmpi",
                    help="initial weights: cmpi-train's exact values (default) or torch's generator")
    ap.add_argument("--eager", action="store_true",
                    help="one rank, PyTorch eager: no process group, no DDP wrapper")
    ap.add_argument("--data-dir", default=os.getcwd(),
                    help="directory relative data.paths are read from (cmpi-train's working directory)")
    args = ap.parse_args()

    cfg = load_config(args.config)
    m, t, d, par = cfg["model"], cfg["training"], cfg["data"], cfg["parallel"]
    # YAML 1.1 reads "1e-08" (no dot) as a string: make every real-valued key a float.
    for section, keys in ((t, ("lr", "min_lr", "weight_decay", "beta1", "beta2", "eps", "grad_clip")),
                          (m, ("dropout", "init_std")), (d, ("concentration",))):
        for key in keys:
            if key in section:
                section[key] = float(section[key])
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("RANK", "0")))
    world = int(os.environ.get("OMPI_COMM_WORLD_SIZE", os.environ.get("WORLD_SIZE", "1")))
    for key, want in (("tensor", 1), ("pipeline", 1), ("spatial", 1), ("zero_stage", 0)):
        if int(par.get(key, want)) != want:
            sys.exit(f"ddp_peer: parallel.{key} must be {want} (pure data parallel), got {par[key]}")
    if float(m.get("dropout", 0)) != 0.0:
        sys.exit("ddp_peer: model.dropout must be 0")
    # The peer builds the GPT-2 style model only (tests/models/gpt_reference.py has both).
    for key, want in (("position", "learned"), ("parallel_residual", False),
                      ("mlp_activation", "gelu"), ("init", "gpt2")):
        if m.get(key, want) != want:
            sys.exit(f"ddp_peer: model.{key} must be {want} (the GPT-2 style model), got {m[key]}")
    if d.get("kind", "markov") not in ("markov", "indexed"):
        sys.exit(f"ddp_peer: data.kind must be markov or indexed, got {d.get('kind')}")
    micro, global_batch, seq = t["micro_batch"], t["global_batch"], m["seq_len"]
    if global_batch % (micro * world):
        sys.exit(f"ddp_peer: global_batch {global_batch} is not a multiple of micro_batch {micro} x {world}")
    micro_batches = global_batch // (micro * world)

    threads = int(t.get("threads", 1))
    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    if args.eager and world != 1:
        sys.exit(f"ddp_peer: --eager runs one rank, got {world} ranks")
    if args.eager and args.hook != "none":
        sys.exit(f"ddp_peer: --eager has no communication hook, got --hook {args.hook}")
    if not args.eager:
        os.environ["MASTER_ADDR"] = master_address(args)
        os.environ["MASTER_PORT"] = str(args.master_port)
        if args.ifname or "GLOO_SOCKET_IFNAME" not in os.environ:
            os.environ["GLOO_SOCKET_IFNAME"] = args.ifname or (
                "eth0" if os.environ.get("CMPI_EMULATED_CLUSTER_STATE") else "lo")
        dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=args.timeout_s))

    torch.manual_seed(int(cfg["run"]["seed"]))
    model = Gpt(m)
    if args.init == "cmpi":  # cmpi-train's initial weights, value for value
        with torch.no_grad():
            for name, p in model.named_parameters():
                values = cmpi_init.initial_tensor(cmpi_init.cmpi_name(name), tuple(p.shape), m,
                                                  int(cfg["run"]["seed"]))
                p.copy_(torch.from_numpy(values))
    n_params = sum(p.numel() for p in model.parameters())
    expected = parameter_count(m)
    if n_params != expected or (args.expect_params and n_params != args.expect_params):
        sys.exit(f"ddp_peer: {n_params} parameters; GptOptions::parameter_count gives {expected}"
                 + (f", cmpi-train reported {args.expect_params}" if args.expect_params else ""))
    # Every replica starts from rank 0's weights (DDP broadcasts them at construction).
    # Buckets of parallel.dp_bucket_bytes, the first one too (DDP's default first bucket is 1 MiB;
    # the trainer has none such). PowerSGD gets one bucket for the whole model: with several, its
    # chained gloo allreduces (issued from future callbacks) interleave with the next bucket's in
    # a different order on different ranks and gloo fails ("op.preamble.length <= op.nbytes").
    bucket_bytes = parse_bytes(par.get("dp_bucket_bytes", "25MiB"))
    if args.hook == "powersgd":
        bucket_bytes = max(bucket_bytes, 4 * n_params + (1 << 20))
    counter = None
    if args.eager:  # the model itself: no buckets, no allreduce
        ddp = model
        counter = ByteCounter("none")
    else:
        dist._DEFAULT_FIRST_BUCKET_BYTES = bucket_bytes
        ddp = DDP(model, bucket_cap_mb=bucket_bytes / float(1 << 20), broadcast_buffers=False)
    if args.eager:
        pass  # nothing to hook
    elif args.hook == "fp16":
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

        counter = ByteCounter("fp16")
        ddp.register_comm_hook(None, counter.wrap(default_hooks.fp16_compress_hook))
    elif args.hook == "powersgd":
        from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as psgd

        state = psgd.PowerSGDState(process_group=None, matrix_approximation_rank=args.powersgd_rank,
                                   start_powerSGD_iter=max(2, args.powersgd_start))
        counter = ByteCounter("powersgd", state)
        ddp.register_comm_hook(state, counter.wrap(psgd.powerSGD_hook))
    else:
        counter = ByteCounter("none")
        ddp.register_comm_hook(None, counter.wrap(
            __import__("torch.distributed.algorithms.ddp_comm_hooks.default_hooks",
                       fromlist=["allreduce_hook"]).allreduce_hook))

    decay = [p for n, p in model.named_parameters() if decays(n)]
    no_decay = [p for n, p in model.named_parameters() if not decays(n)]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": t["weight_decay"]}, {"params": no_decay, "weight_decay": 0.0}],
        lr=t["lr"], betas=(t["beta1"], t["beta2"]), eps=t["eps"])

    steps = int(t["steps"])
    data_check = "markov (bench/train/markov_check.cpp checks the port)"
    if d.get("kind", "markov") == "indexed":
        try:
            indexed = IndexedTrainSource(d, seq, global_batch, steps, args.data_dir)
        except (OSError, ValueError) as e:
            sys.exit(f"ddp_peer: data.paths: {e}")
        data_check = indexed.check_against_cache() if rank == 0 else ""
        floor = 0.0
        info = indexed.prefix + ".json"  # written by make_markov_dataset.py: the chain's floor
        if os.path.exists(info):
            with open(info) as f:
                floor = float(json.load(f).get("entropy_floor", 0.0))
        draw = lambda step, first: [indexed.sample(step, first + b) for b in range(micro)]  # noqa: E731
    else:
        source = MarkovSource(m["vocab_size"], d["branching"], d["concentration"], d["seed"])
        floor = source.entropy_rate
        draw = lambda step, first: [source.sample(step, first + b, seq + 1) for b in range(micro)]  # noqa: E731
    metrics = summary_path = None
    if rank == 0:
        os.makedirs(args.out, exist_ok=True)
        metrics = open(os.path.join(args.out, "metrics.jsonl"), "w")
        summary_path = os.path.join(args.out, "summary.json")
        transport = ("eager (no process group, no DDP)" if args.eager else
                     f"gloo on {os.environ['GLOO_SOCKET_IFNAME']} via {os.environ['MASTER_ADDR']}:{args.master_port}")
        print(f"ddp_peer: {n_params} parameters | {world} ranks, {transport} | hook {args.hook} | {micro_batches} "
              f"micro-batches of {micro} per rank | init {args.init} | data {d.get('kind', 'markov')} "
              f"({data_check}), entropy floor {floor:.4f}", flush=True)

    losses, start_all = [], time.perf_counter()
    for step in range(steps):
        batches = []
        for mb in range(micro_batches):
            first = (rank * micro_batches + mb) * micro
            batches.append(torch.tensor(np.array(draw(step, first)), dtype=torch.long))
        raw0, wire0 = counter.raw, counter.wire
        lr = lr_at(step, t)
        for group in optimizer.param_groups:
            group["lr"] = lr
        step_start, cpu_start = time.perf_counter(), time.process_time()
        optimizer.zero_grad(set_to_none=False)
        local = 0.0
        scale = 1.0 / micro_batches
        for mb, batch in enumerate(batches):
            last = mb + 1 == micro_batches
            ctx = ddp.no_sync() if not (last or args.eager) else _null()
            with ctx:
                loss = ddp(batch[:, :seq], batch[:, 1:])
                (loss * scale).backward()
            local += loss.item() * scale
        loss_t = torch.tensor([local / world])
        if not args.eager:
            dist.all_reduce(loss_t)
        clip = float(t.get("grad_clip", 0))
        if clip > 0:
            grad_norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), clip))
        else:
            grad_norm = float(torch.norm(torch.stack([p.grad.norm() for p in model.parameters()])))
        optimizer.step()
        step_s = time.perf_counter() - step_start
        cpu_ms = (time.process_time() - cpu_start) * 1e3
        loss_value = float(loss_t.item())
        losses.append(loss_value)
        if rank == 0:
            rec = {"step": step + 1, "total_steps": steps, "loss": loss_value,
                   "loss_floor": floor, "lr": lr, "grad_norm": grad_norm,
                   "tokens_per_s": global_batch * seq / step_s, "step_ms": step_s * 1e3, "cpu_ms": cpu_ms,
                   "raw_bytes": counter.raw - raw0, "wire_bytes": counter.wire - wire0}
            metrics.write(json.dumps(rec) + "\n")
            metrics.flush()
            if (step + 1) % 10 == 0 or step == 0 or step + 1 == steps:
                print(f"step {step + 1}/{steps} | loss {loss_value:.4f} (floor {floor:.4f}) | "
                      f"lr {lr:.2e} | {rec['tokens_per_s']:.0f} tok/s | step {rec['step_ms']:.1f} ms", flush=True)
    seconds = time.perf_counter() - start_all
    # bytes summed over ranks, as cmpi-train's summary
    totals = torch.tensor([float(counter.raw), float(counter.wire)], dtype=torch.float64)
    if not args.eager:
        dist.all_reduce(totals)
    if rank == 0:
        metrics.close()
        summary = {"steps": steps, "first_loss": losses[0], "final_loss": losses[-1],
                   "loss_floor": floor, "seconds": seconds,
                   "tokens_per_s": global_batch * seq * steps / seconds, "parameters": n_params,
                   "layout": f"dp={world} tp=1 pp=1 sp=1 zero=0",
                   "system": "pytorch-eager" if args.eager else "pytorch-ddp",
                   "hook": args.hook, "torch": torch.__version__, "init": args.init,
                   "data": d.get("kind", "markov"), "data_check": data_check,
                   "groups": {"dp": {"raw_bytes": int(totals[0]), "wire_bytes": int(totals[1]),
                                     "ratio": float(totals[0] / totals[1]) if totals[1] else 1.0}}}
        if args.hook == "powersgd":
            summary["powersgd"] = {"rank": args.powersgd_rank, "start_iter": max(2, args.powersgd_start)}
        with open(summary_path, "w") as f:
            json.dump(summary, f)
            f.write("\n")
        print(f"done: {steps} steps in {seconds:.1f} s | loss {losses[0]:.4f} -> {losses[-1]:.4f} "
              f"(floor {floor:.4f}) | {summary['tokens_per_s']:.0f} tok/s", flush=True)
    if not args.eager:
        dist.barrier()
        dist.destroy_process_group()


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


if __name__ == "__main__":
    main()
