"""Reads a run's TensorBoard event files with TensorBoard's own reader and
checks that every scalar equals the value metrics.jsonl holds for that step.

Usage: tensorboard_check.py RUN_DIR [MIN_STEPS]
Prints one line per problem and exits 1 on any; exits 0 with a summary.
"""
import json
import sys

from tensorboard.backend.event_processing import event_accumulator


# Half the last decimal metrics.jsonl prints these with.
ABS_TOL = {"tokens_per_s": 0.05, "step_ms": 5e-4, "comm_ms": 5e-4, "ratio": 5e-5}


def jsonl_values(run_dir):
    """step -> {tag: value} as the trainer's MetricsLog::scalars names them."""
    values = {}
    with open(f"{run_dir}/metrics.jsonl") as f:
        for line in f:
            r = json.loads(line)
            v = {}
            for key in ("loss", "lr", "grad_norm", "tokens_per_s", "val_loss", "loss_scale",
                        "tflops_per_rank", "mfu", "hfu", "step_ms", "comm_ms"):
                if r.get(key) is not None:
                    v[key] = float(r[key])
            for name, g in (r.get("groups") or {}).items():
                v[f"groups/{name}/ratio"] = float(g["ratio"])
                v[f"groups/{name}/sent_MB"] = g["wire_bytes"] / 1e6
            values[r["step"]] = v
    return values


def main():
    run_dir = sys.argv[1]
    min_steps = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    acc = event_accumulator.EventAccumulator(f"{run_dir}/tensorboard",
                                             size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    tags = acc.Tags()["scalars"]
    expected = jsonl_values(run_dir)
    problems = []
    for tag in ("loss", "val_loss", "lr", "grad_norm", "tokens_per_s", "mfu", "hfu",
                "tflops_per_rank", "groups/dp/ratio", "groups/dp/sent_MB"):
        if tag not in tags:
            problems.append(f"tag {tag} missing (have {sorted(tags)})")
    compared = 0
    for tag in tags:
        events = acc.Scalars(tag)
        steps = [e.step for e in events]
        if len(set(steps)) != len(steps):
            problems.append(f"{tag}: a step logged twice: {steps}")
        for e in events:
            want = expected.get(e.step, {}).get(tag)
            if want is None:
                problems.append(f"{tag} step {e.step}: {e.value} not in metrics.jsonl")
                continue
            # TensorBoard stores 32-bit floats (7 digits); the JSON prints
            # some fields with fewer: 6 significant digits (mfu, hfu,
            # tflops_per_rank) or a fixed number of decimals. The two errors
            # add up (a value at a decimal's half way, 32.5085 ms, prints as
            # 32.509 while its float32 is 32.50849914): their sum bounds the
            # difference, not the larger of the two.
            tol = ABS_TOL.get(tag.rsplit("/", 1)[-1], 0.0)
            if abs(e.value - want) > tol + 1e-5 * max(abs(e.value), abs(want)):
                problems.append(f"{tag} step {e.step}: tensorboard {e.value} != jsonl {want}")
            compared += 1
    loss_steps = [e.step for e in acc.Scalars("loss")] if "loss" in tags else []
    if sorted(loss_steps) != sorted(expected) or len(loss_steps) < min_steps:
        problems.append(f"loss steps {loss_steps} != metrics.jsonl steps {sorted(expected)}")
    for p in problems:
        print("FAIL:", p)
    if problems:
        return 1
    print(f"tensorboard: {len(tags)} tags, {compared} values equal metrics.jsonl's "
          f"over steps {min(loss_steps)}..{max(loss_steps)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
