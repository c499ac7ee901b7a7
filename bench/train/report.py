#!/usr/bin/env python3
"""CSV and plots of an end-to-end training benchmark directory (written by run_bench.py).

    report.py OUT        # reads OUT/meta.json, OUT/runs.jsonl, OUT/runs/*/metrics.jsonl, summary.json

Writes OUT/train_bench.csv (one row per link x cell; '#' comment lines first: machine, load
averages, commands), OUT/train_bench.md (the same table in Markdown), OUT/train_throughput.png
(tokens/s, grouped bars per link) and OUT/train_loss.png (loss curves per link).

Per run, steps after the warm-up give the medians (step time, tokens/s, comm time), and the wire
ratio is raw / wire bytes summed over those steps (rank 0's traffic, metrics.jsonl); per cell,
the median over the repetitions that exited 0. A cell any of whose runs failed (exit status not
0, or no metrics) is marked FAILED with the count; it is never dropped.
"""

import csv
import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from report_common import color_of, fmt, read_jsonl  # noqa: E402

COLUMNS = ["link", "system", "layout", "policy", "status", "runs_ok", "runs", "step_ms",
           "tokens_per_s", "tokens_per_s_min", "tokens_per_s_max", "speedup_vs_none",
           "exposed_comm_ms", "comm_ms", "comm_metric", "wire_ratio", "wire_MB_per_step", "dp_ratio", "tp_ratio",
           "pp_ratio", "final_loss", "loss_floor", "parameters", "load_1min_runs"]


def median(xs):
    xs = [x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return statistics.median(xs) if xs else None


def run_stats(entry, warmup):
    """Per-run figures from its metrics.jsonl and summary.json; None if unusable."""
    d = entry.get("run_dir") or ""
    mpath, spath = os.path.join(d, "metrics.jsonl"), os.path.join(d, "summary.json")
    if entry.get("rc") != 0 or not os.path.exists(mpath) or not os.path.exists(spath):
        return None
    steps = read_jsonl(mpath)
    with open(spath) as f:
        summary = json.load(f)
    timed = [r for r in steps if r["step"] > warmup]
    if not timed:
        return None
    # Exposed communication: every blocking call (tp/pp, the loss allreduce) counts whole; of
    # the gradient reduction (part of comm_ms), only what the step waited for after backward
    # (grad_reduce_exposed_ms, when the trainer reports it; without overlap it equals the total).
    def exposed(r):
        if "comm_ms" not in r:
            return None
        if "grad_reduce_ms" in r and "grad_reduce_exposed_ms" in r:
            return r["comm_ms"] - r["grad_reduce_ms"] + r["grad_reduce_exposed_ms"]
        return r["comm_ms"]

    has_comm = "comm_ms" in timed[0]
    comm_metric = ("comm_ms - grad_reduce_ms + grad_reduce_exposed_ms" if "grad_reduce_exposed_ms" in timed[0]
                   else "comm_ms") if has_comm else ""
    raw = sum(r.get("raw_bytes", 0) for r in timed)
    wire = sum(r.get("wire_bytes", 0) for r in timed)
    groups = summary.get("groups", {})
    return {
        "step_ms": median([r["step_ms"] for r in timed]),
        "tokens_per_s": median([r["tokens_per_s"] for r in timed]),
        "comm_ms": median([r.get("comm_ms") for r in timed]) if has_comm else None,
        "exposed_comm_ms": median([exposed(r) for r in timed]) if has_comm else None,
        "comm_metric": comm_metric,
        "wire_ratio": raw / wire if wire else (1.0 if raw == 0 else None),
        "wire_MB_per_step": wire / len(timed) / 1e6,
        "group_ratio": {g: v.get("ratio") for g, v in groups.items()},
        "final_loss": steps[-1]["loss"],
        "loss_floor": summary.get("loss_floor"),
        "parameters": summary.get("parameters"),
        "losses": [r["loss"] for r in steps],
    }


def build_rows(meta, entries):
    warmup = int(meta["warmup"])
    latest = {}  # a run repeated with --resume: its last attempt counts
    for e in entries:
        latest[(e["link"], e["rep"], e["cell"])] = e
    cells = {}
    for e in latest.values():
        key = (e["link"], e["cell"])
        cells.setdefault(key, {"entries": [], "system": e["system"], "layout": e["layout"],
                               "policy": e["policy"]})["entries"].append(e)
    order = {c: i for i, c in enumerate(meta["cells"])}
    links = meta["links"]
    rows, curves = [], {}
    for (link, cell_id), c in sorted(cells.items(), key=lambda kv: (links.index(kv[0][0]) if kv[0][0] in links
                                                                      else 99, order.get(kv[0][1], 99))):
        stats = [run_stats(e, warmup) for e in c["entries"]]
        ok = [s for s in stats if s]
        n = len(c["entries"])
        row = {"link": link, "system": c["system"], "layout": c["layout"], "policy": c["policy"],
               "runs_ok": len(ok), "runs": n,
               "status": "ok" if len(ok) == n else f"FAILED ({n - len(ok)} of {n} runs)",
               "load_1min_runs": "/".join(e.get("load_before", "?").split()[0] for e in c["entries"]
                                           if e.get("load_before"))}
        if ok:
            tps = [s["tokens_per_s"] for s in ok]
            row.update(step_ms=median([s["step_ms"] for s in ok]), tokens_per_s=median(tps),
                       tokens_per_s_min=min(tps), tokens_per_s_max=max(tps),
                       comm_ms=median([s["comm_ms"] for s in ok]), comm_metric=ok[0]["comm_metric"],
                       exposed_comm_ms=median([s["exposed_comm_ms"] for s in ok]),
                       wire_ratio=median([s["wire_ratio"] for s in ok]),
                       wire_MB_per_step=median([s["wire_MB_per_step"] for s in ok]),
                       final_loss=median([s["final_loss"] for s in ok]), loss_floor=ok[0]["loss_floor"],
                       parameters=ok[0]["parameters"])
            for g in ("dp", "tp", "pp"):
                row[f"{g}_ratio"] = median([s["group_ratio"].get(g) for s in ok])
            length = min(len(s["losses"]) for s in ok)
            curves[(link, cell_id)] = [median([s["losses"][i] for s in ok]) for i in range(length)]
        rows.append(row)
    # speed-up against the same system and layout's uncompressed cell on the same link
    for row in rows:
        base = next((r for r in rows if r["link"] == row["link"] and r["system"] == row["system"]
                     and r["layout"] == row["layout"] and r["policy"] == "none"), None)
        if base and base.get("tokens_per_s") and row.get("tokens_per_s"):
            row["speedup_vs_none"] = row["tokens_per_s"] / base["tokens_per_s"]
    return rows, curves


def header_lines(meta, rows):
    m = meta.get("machine", {})
    lines = [
        "end-to-end training benchmark (bench/train/run_bench.py)",
        f"started {meta.get('started', '?')}, finished {meta.get('finished', '?')}",
        f"machine: {m.get('lscpu Model name', '?')}; CPUs {m.get('nproc', '?')} (lscpu: "
        f"{m.get('lscpu CPU(s)', '?')} CPUs, {m.get('lscpu Thread(s) per core', '?')} threads/core, "
        f"{m.get('lscpu Core(s) per socket', '?')} cores/socket); memory {m.get('memory', '?')}; "
        f"kernel {m.get('kernel', '?')}; git {m.get('git', '?')}",
        f"load average (1/5/15 min) at start {meta.get('load_start', '?')}, at end {meta.get('load_end', '?')}",
        f"command: {meta.get('command', '?')}",
        f"config: {meta.get('config', '?')}; build: {meta.get('build_dir', '?')}; extra --set: "
        f"{' '.join(meta.get('sets', [])) or '-'}",
        f"{meta.get('nodes')} emulated nodes, links {','.join(meta.get('links', []))}"
        f"{', delay ' + meta['delay'] if meta.get('delay') else ''}; {meta.get('reps')} repetitions "
        f"interleaved; {meta.get('steps')} steps, first {meta.get('warmup')} left out of the medians",
        f"DDP peer: PowerSGD rank {meta.get('powersgd_rank')}, start_powerSGD_iter "
        f"{meta.get('powersgd_start')}; data check: {meta.get('markov_check', 'not run')}",
        f"data: {('indexed dataset ' + meta['dataset']) if meta.get('dataset') else 'the config data section'}; "
        f"initial weights, DDP peer vs cmpi-train: {meta.get('init_check', 'not checked')}",
    ]
    for r in meta.get("resumes", []):
        lines.append(f"resumed {r['started']} (load {r['load_start']}): {r['command']}")
    if meta.get("ddp_config_command"):
        lines.append(f"DDP peer config: {meta['ddp_config_command']}")
    lines.append("per-run commands: runs.jsonl (field 'command'); columns: medians over the timed steps, "
                 "then over the repetitions; comm_ms = cmpi-train's time inside communication calls "
                 "on rank 0; exposed_comm_ms = comm_metric (the gradient reduction only as far as the step waited "
                 "for it after backward), both empty for the DDP peer; wire_ratio = raw/wire bytes of "
                 "rank 0 over the timed steps; *_ratio = per group, all ranks, whole run")
    return lines


def write_csv(path, meta, rows):
    with open(path, "w", newline="") as f:
        for line in header_lines(meta, rows):
            f.write("# " + line + "\n")
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for r in rows:
            w.writerow([fmt(r.get(c), 3 if c.endswith("ratio") or c in ("speedup_vs_none",) else
                            (4 if c in ("final_loss", "loss_floor") else 1)) for c in COLUMNS])


def write_markdown(path, meta, rows):
    cols = [("link", "link"), ("system", "system"), ("layout", "layout"), ("policy", "policy"),
            ("status", "status"), ("step_ms", "step ms"), ("tokens_per_s", "tokens/s"),
            ("speedup_vs_none", "vs none"), ("exposed_comm_ms", "exposed comm ms"), ("wire_ratio", "wire ratio"),
            ("final_loss", "final loss")]
    with open(path, "w") as f:
        f.write("| " + " | ".join(h for _, h in cols) + " |\n")
        f.write("|" + "---|" * len(cols) + "\n")
        for r in rows:
            cells = []
            for c, _ in cols:
                v = r.get(c)
                if c == "tokens_per_s" and v is not None:
                    v = f"{v:.0f} ({r['tokens_per_s_min']:.0f}–{r['tokens_per_s_max']:.0f})"
                cells.append(fmt(v, 2 if c in ("speedup_vs_none", "wire_ratio") else
                                 (3 if c == "final_loss" else 0)) or "–")
            f.write("| " + " | ".join(cells) + " |\n")


def plot(out, meta, rows, curves):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    links = [l for l in meta["links"] if any(r["link"] == l for r in rows)]
    if not links:
        return
    groups = []  # (system, layout) in order of appearance
    for r in rows:
        g = (r["system"], r["layout"])
        if g not in groups:
            groups.append(g)
    extra = {}
    subtitle = (f"{meta.get('machine', {}).get('lscpu Model name', '')}, {meta.get('nodes')} nodes; load "
                f"{meta.get('load_start', '?').split()[0]}→{meta.get('load_end', '?').split()[0]}; "
                f"{meta.get('reps')} reps × {meta.get('steps')} steps")

    fig, axes = plt.subplots(1, len(links), figsize=(6.5 * len(links), 4.8), squeeze=False, sharey=True)
    for ax, link in zip(axes[0], links):
        x = 0.0
        ticks, labels, seen = [], [], set()
        for g in groups:
            members = [r for r in rows if r["link"] == link and (r["system"], r["layout"]) == g]
            if not members:
                continue
            width = 0.8 / max(1, len(members))
            for i, r in enumerate(members):
                pos = x + (i - (len(members) - 1) / 2) * width
                label = r["policy"] if r["policy"] not in seen else None
                seen.add(r["policy"])
                if r.get("tokens_per_s") is not None:
                    v = r["tokens_per_s"]
                    ax.bar(pos, v, width * 0.92, color=color_of(r["policy"], extra), label=label,
                           hatch="//" if r["status"] != "ok" else None, edgecolor="black", linewidth=0.4)
                    ax.errorbar(pos, v, yerr=[[v - r["tokens_per_s_min"]], [r["tokens_per_s_max"] - v]],
                                color="black", capsize=2, linewidth=0.8)
                    ax.text(pos + width * 0.05, v * 0.02, f"{v:.0f}", ha="center", va="bottom", fontsize=7, rotation=90,
                            color="white")
                else:
                    ax.bar(pos, 0, width * 0.92, color=color_of(r["policy"], extra), label=label)
                if r["status"] != "ok":
                    ax.text(pos, 0, " FAILED", ha="center", va="bottom", fontsize=8, rotation=90, color="red")
            ticks.append(x)
            labels.append(("DDP " if g[0] == "pytorch-ddp" else "cmpi ") + g[1])
            x += 1.0
        ax.set_xlim(-0.6, x - 0.4)
        ax.set_xticks(ticks)
        ax.set_xticklabels(labels)
        ax.set_title(f"link {link}")
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8, title="policy / hook", title_fontsize=8)
    axes[0][0].set_ylabel("tokens/s (median; bars: min–max over reps)")
    fig.suptitle("End-to-end training throughput\n" + subtitle, fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "train_throughput.png"), dpi=110)
    plt.close(fig)

    styles = {"cmpi-train": "-", "pytorch-ddp": "--"}
    markers = {}
    fig, axes = plt.subplots(1, len(links), figsize=(6.5 * len(links), 4.5), squeeze=False, sharey=True)
    floor = next((r["loss_floor"] for r in rows if r.get("loss_floor") is not None), None)
    for ax, link in zip(axes[0], links):
        for r in rows:
            if r["link"] != link:
                continue
            cell_id = next((cid for (l, cid) in curves if l == link and cid.endswith("/" + r["policy"])
                            and cid.split("/")[1] == r["layout"]
                            and cid.startswith("ddp" if r["system"] == "pytorch-ddp" else "cmpi")), None)
            if cell_id is None:
                continue
            ys = curves[(link, cell_id)]
            lay = r["layout"]
            if lay not in markers:
                markers[lay] = "os^vD"[len(markers) % 5]
            ax.plot(range(1, len(ys) + 1), ys, styles.get(r["system"], "-"), marker=markers[lay],
                    markersize=3, markevery=max(1, len(ys) // 8), color=color_of(r["policy"], extra),
                    linewidth=1.1, label=("DDP " if r["system"] == "pytorch-ddp" else "") + f"{lay} {r['policy']}")
        if floor is not None:
            ax.axhline(floor, color="black", linewidth=0.8, linestyle=":", label=f"entropy floor {floor:.3f}")
        ax.set_title(f"link {link}")
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, ncol=2)
    axes[0][0].set_ylabel("training loss (median over reps)")
    fig.suptitle("Loss curves\n" + subtitle, fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "train_loss.png"), dpi=110)
    plt.close(fig)


def main(out):
    with open(os.path.join(out, "meta.json")) as f:
        meta = json.load(f)
    index = os.path.join(out, "runs.jsonl")
    entries = read_jsonl(index) if os.path.exists(index) else []
    rows, curves = build_rows(meta, entries)
    write_csv(os.path.join(out, "train_bench.csv"), meta, rows)
    write_markdown(os.path.join(out, "train_bench.md"), meta, rows)
    try:
        plot(out, meta, rows, curves)
    except ImportError as e:
        print(f"report: no plots ({e}); install python3-matplotlib")
    if meta.get("target_step"):
        import target_report

        target_report.main(out, header_lines(meta, rows))
    if meta.get("link_schedule"):
        import link_change_report

        link_change_report.main(out)
    failed = [r for r in rows if r["status"] != "ok"]
    with open(os.path.join(out, "train_bench.md")) as f:
        print(f.read(), end="")
    print(f"report: {len(rows)} cells, {len(failed)} with failed runs -> {out}/train_bench.csv, "
          f"train_throughput.png, train_loss.png")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: report.py OUT_DIR")
    sys.exit(main(sys.argv[1]))
