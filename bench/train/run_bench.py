#!/usr/bin/env python3
"""End-to-end training benchmark: cmpi-train (and a PyTorch DDP peer) on the emulated cluster.

Runs a matrix of links x cells, a cell being (layout, policy) for cmpi-train or (dp layout, hook)
for the DDP peer, interleaved: repetition r runs every link (in alternating order), and inside a
link every cell (in alternating order), so machine noise hits every cell alike. Each (repetition,
link) is one emulated-cluster session (`up` once, every cell with `run`, `down` in a finally),
held under the shared cluster lock (flock /tmp/cmpi-cluster.lock). Then report.py writes the CSV
and the plots. See bench/train/README.md.
"""

import argparse
import datetime
import fcntl
import json
import os
import platform
import shlex
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CLUSTER = os.path.join(ROOT, "scripts", "emulated_cluster.sh")
sys.path.insert(0, HERE)

import report  # noqa: E402

DEFAULT_LINKS = "200mbit,1gbit"
DEFAULT_POLICIES = "none,mzhybrid,zhybrid"
DEFAULT_LAYOUTS = "dp4,dp2tp2pp2"
DEFAULT_DDP = "none,fp16,powersgd"


class Interrupted(Exception):
    pass


def on_signal(signum, frame):
    raise Interrupted(f"signal {signum}")


def parse_layout(text, nodes):
    """'dp4', 'dp2tp2pp2', 'dp2xtp2xpp2', 'dp2×tp2×pp2', optional 'z1' (ZeRO stage)."""
    s = text.replace("×", "").replace("x", "").replace("-", "").replace("_", "")
    dims = {"dp": 1, "tp": 1, "pp": 1, "z": 0}
    i = 0
    while i < len(s):
        for key in ("dp", "tp", "pp", "z"):
            if s.startswith(key, i):
                j = i + len(key)
                k = j
                while k < len(s) and s[k].isdigit():
                    k += 1
                if k == j:
                    raise ValueError(f"layout {text!r}: {key} needs a number")
                dims[key] = int(s[j:k])
                i = k
                break
        else:
            raise ValueError(f"layout {text!r}: expected dpN, tpN, ppN, zN")
    world = dims["dp"] * dims["tp"] * dims["pp"]
    if world % nodes:
        raise ValueError(f"layout {text!r}: {world} ranks do not spread evenly over {nodes} nodes")
    return {"name": text, "dp": dims["dp"], "tp": dims["tp"], "pp": dims["pp"], "zero": dims["z"],
            "world": world, "per_node": world // nodes}


def powersgd_rule(rank, start):
    """cmpi-train's PowerSGD at the DDP peer's rank and start (docs/policy.md, "Low rank")."""
    return ("compression.rules=[{match: {group: dp, op: allreduce, role: gradient}, "
            f"codec: {{name: powersgd, rank: {rank}, start_step: {start}}}}}]")


def parse_policies(items, defs, powersgd_rank=4, powersgd_start=5):
    """A policy is a preset name, a label given with --policy-def LABEL='k=v;k=v', or `powersgd`
    (a rule at --powersgd-rank / --powersgd-start, like the DDP peer's hook)."""
    out = []
    for name in items:
        if name in defs:
            out.append({"name": name, "sets": defs[name]})
        elif name == "powersgd":
            out.append({"name": name, "sets": [powersgd_rule(powersgd_rank, powersgd_start)]})
        else:
            out.append({"name": name, "sets": [f"compression.preset={name}"]})
    return out


def parse_link_schedule(text):
    """'10:100mbit,20:1gbit' -> [(10, '100mbit'), (20, '1gbit')], steps strictly increasing."""
    schedule = []
    for item in csv_list(text):
        step, sep, rate = item.partition(":")
        if not sep or not step.strip().isdigit() or not rate.strip():
            raise ValueError(f"--link-schedule item {item!r}: expected STEP:RATE, e.g. 10:100mbit")
        if schedule and int(step) <= schedule[-1][0]:
            raise ValueError(f"--link-schedule item {item!r}: steps must increase")
        schedule.append((int(step), rate.strip()))
    return schedule


class LinkScheduler:
    """Changes the emulated links while a run trains: after the run's metrics.jsonl (rank 0 writes
    one line per finished step, cmpi-train and the DDP peer alike) reaches STEP lines, every node
    link is set to RATE (emulated_cluster.sh rate). Records when each change took effect."""

    def __init__(self, schedule, metrics_path, set_rate):
        self.schedule, self.metrics_path, self.set_rate = schedule, metrics_path, set_rate
        self.changes = []
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self.watch, daemon=True)

    def steps_done(self):
        try:
            with open(self.metrics_path) as f:
                return sum(1 for line in f if line.strip())
        except OSError:
            return 0

    def watch(self):
        pending = list(self.schedule)
        while pending and not self.stop_event.wait(0.05):
            done = self.steps_done()
            while pending and done >= pending[0][0]:
                step, rate = pending.pop(0)
                self.set_rate(rate)
                self.changes.append({"after_step": step, "rate": rate, "seen_at_step": done,
                                     "time": round(time.time(), 3)})

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop_event.set()
        self.thread.join()


def config_with_sets(path, sets):
    """The YAML config at `path` with KEY=VALUE overrides applied (no defaults filled in)."""
    import yaml

    with open(path) as f:
        cfg = yaml.safe_load(f)
    for s in sets:
        key, _, value = s.partition("=")
        node = cfg
        *keys, last = key.split(".")
        for k in keys:
            node = node.setdefault(k, {})
        node[last] = yaml.safe_load(value)
    return cfg


def csv_list(text):
    return [x.strip() for x in text.split(",") if x.strip()]


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def machine_info():
    info = {"host": platform.node(), "kernel": platform.release()}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            key, _, value = line.partition(":")
            key, value = key.strip(), value.strip()
            if key in ("Model name", "CPU(s)", "Thread(s) per core", "Core(s) per socket",
                       "Socket(s)", "CPU max MHz"):
                info["lscpu " + key] = value
    except (OSError, subprocess.CalledProcessError):
        pass
    info["nproc"] = str(os.cpu_count())
    try:
        with open("/proc/meminfo") as f:
            info["memory"] = f.readline().split(":")[1].strip()
    except OSError:
        pass
    try:
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        info["git"] = head + (" (uncommitted changes)" if dirty else "")
    except OSError:
        pass
    return info


class Runner:
    def __init__(self, args):
        self.args = args
        self.out = os.path.abspath(args.out)
        self.runs_dir = os.path.join(self.out, "runs")
        self.logs_dir = os.path.join(self.out, "logs")
        self.trainer = os.path.join(os.path.abspath(args.build_dir), "trainer", "cmpi-train")
        self.child = None
        self.counter = 0
        self.params_seen = 0
        self.index_file = os.path.join(self.out, "runs.jsonl")
        self.dataset_prefix = ""

    # -- processes -------------------------------------------------------------------------
    def run_logged(self, cmd, log_path, timeout):
        """Runs cmd in its own process group; on timeout TERM then KILL that group. Returns rc."""
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
        with open(log_path, "a") as log:
            log.write("$ " + " ".join(shlex.quote(c) for c in cmd) + "\n")
            log.flush()
            self.child = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                                          start_new_session=True, cwd=ROOT)
            try:
                rc = self.child.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                log.write(f"\nrun_bench: timed out after {timeout} s, terminating\n")
                self.kill_child()
                rc = 124
            finally:
                self.child = None
        return rc

    def kill_child(self):
        child = self.child
        if child is None or child.poll() is not None:
            return
        try:
            os.killpg(child.pid, signal.SIGTERM)
            child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
        except ProcessLookupError:
            pass

    def set_rate(self, rate):
        words = ["rate", rate] + (["--delay", self.args.delay] if self.args.delay else [])
        self.cluster(*words)

    def cluster(self, *words, check=True):
        cmd = ["bash", CLUSTER, *words]
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        if check and r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")
        return r

    # -- commands --------------------------------------------------------------------------
    def common_sets(self):
        sets = [f"training.steps={self.args.steps}"]
        if self.args.lr_warmup is not None:
            sets.append(f"training.warmup_steps={self.args.lr_warmup}")
        if self.dataset_prefix:  # both systems read the same indexed dataset
            sets += ["data.kind=indexed", f"data.paths=[{self.dataset_prefix}]", "data.split=[1, 0]"]
        return sets + list(self.args.set)

    def cmpi_command(self, cell, name):
        lay = cell["layout"]
        cmd = [cell.get("trainer", self.trainer), "--config", self.config]
        sets = self.common_sets() + [
            f"run.dir={self.runs_dir}", f"run.name={name}",
            "parallel.data=auto", f"parallel.tensor={lay['tp']}", f"parallel.pipeline={lay['pp']}",
            f"parallel.zero_stage={lay['zero']}"] + cell["policy"]["sets"]
        for s in sets:
            cmd += ["--set", s]
        return cmd

    def ddp_command(self, cell, name):
        self.counter += 1
        # Below the kernel's ephemeral range (32768-60999), where MPI's own sockets live.
        port = 20000 + (os.getpid() * 7 + self.counter) % 10000
        cmd = [self.args.python, os.path.join(HERE, "ddp_peer.py"), "--config", self.resolved_config,
               "--hook", cell["hook"], "--out", os.path.join(self.runs_dir, name),
               "--master-port", str(port), "--powersgd-rank", str(self.args.powersgd_rank),
               "--powersgd-start", str(self.args.powersgd_start), "--data-dir", ROOT]
        if self.params_seen:
            cmd += ["--expect-params", str(self.params_seen)]
        return cmd

    # -- setup -----------------------------------------------------------------------------
    def prepare(self):
        a = self.args
        os.makedirs(self.runs_dir, exist_ok=True)
        os.makedirs(self.logs_dir, exist_ok=True)
        self.config = os.path.abspath(a.config)
        nodes = a.nodes
        self.prepare_dataset()
        self.layouts = [parse_layout(x, nodes) for x in csv_list(a.layouts)]
        defs = {}
        for d in a.policy_def:
            label, _, sets = d.partition("=")
            defs[label] = [s for s in sets.split(";") if s]
        self.policies = parse_policies(csv_list(a.policies), defs, a.powersgd_rank, a.powersgd_start)
        self.cells = []
        for lay in self.layouts:
            for pol in self.policies:
                self.cells.append({"id": f"cmpi/{lay['name']}/{pol['name']}", "system": "cmpi-train",
                                   "layout": lay, "policy": pol, "label": pol["name"]})
                if a.baseline:
                    # The same cell on another binary (a build before a change), in the same
                    # rotation, so that before and after see the same machine noise.
                    label = f"{pol['name']}-baseline"
                    self.cells.append({"id": f"cmpi/{lay['name']}/{label}", "system": "cmpi-train",
                                       "layout": lay, "policy": pol, "label": label,
                                       "trainer": os.path.abspath(a.baseline)})
        ddp_layout = parse_layout(f"dp{nodes}", nodes)
        for hook in csv_list(a.ddp):
            self.cells.append({"id": f"ddp/{ddp_layout['name']}/{hook}", "system": "pytorch-ddp",
                               "layout": ddp_layout, "hook": hook, "label": hook})
        if not os.access(self.trainer, os.X_OK) and any(c["system"] == "cmpi-train" for c in self.cells):
            sys.exit(f"run_bench: {self.trainer} not found; build it (--build-dir)")
        if a.baseline and not os.access(a.baseline, os.X_OK):
            sys.exit(f"run_bench: --baseline {a.baseline} is not an executable cmpi-train")
        self.links = csv_list(a.links)
        try:
            self.schedule = parse_link_schedule(a.link_schedule)
        except ValueError as e:
            sys.exit(f"run_bench: {e}")
        if self.schedule and self.schedule[-1][0] >= a.steps:
            sys.exit(f"run_bench: --link-schedule changes the link after step {self.schedule[-1][0]}, "
                     f"but runs train only {a.steps} steps")

        meta = {"started": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M:%S UTC"),
                "load_start": loadavg(), "machine": machine_info(),
                "command": " ".join(shlex.quote(x) for x in sys.argv),
                "config": self.config, "build_dir": os.path.abspath(a.build_dir),
                "baseline": os.path.abspath(a.baseline) if a.baseline else "",
                "links": self.links, "cells": [c["id"] for c in self.cells], "reps": a.reps,
                "steps": a.steps, "warmup": a.warmup, "nodes": nodes, "delay": a.delay,
                "sets": list(a.set), "link_schedule": a.link_schedule, "dataset": self.dataset_prefix,
                "target_step": a.target_step, "tokens_per_step": self.tokens_per_step(), "target_window": a.target_window,
                "target_reference": a.target_reference or self.default_reference(), "powersgd_rank": a.powersgd_rank, "powersgd_start": a.powersgd_start,
                # How oversubscribed ranks wait (scripts/emulated_cluster.sh run).
                "cluster_wait": {k: os.environ.get(k, "default")
                                 for k in ("CMPI_CLUSTER_WAIT", "CMPI_CLUSTER_WAIT_YIELD_US")}}
        meta_path = os.path.join(self.out, "meta.json")
        if a.resume and os.path.exists(meta_path):  # keep the first session's start; log the resume
            with open(meta_path) as f:
                first = json.load(f)
            resumes = first.get("resumes", []) + [{k: meta[k] for k in ("started", "load_start", "command")}]
            meta.update({k: first[k] for k in ("started", "load_start", "command") if k in first},
                        resumes=resumes)
        self.meta = meta
        self.write_meta()
        print(f"run_bench: {len(self.links)} links x {len(self.cells)} cells x {a.reps} repetitions, "
              f"{a.steps} steps ({a.warmup} warm-up) -> {self.out}")
        print(f"run_bench: load average at start {meta['load_start']} | "
              f"{meta['machine'].get('lscpu Model name', '?')}, {meta['machine']['nproc']} CPUs")

        self.resolved_config = os.path.join(self.out, "resolved_config.yaml")
        if any(c["system"] == "pytorch-ddp" for c in self.cells):
            self.resolve_config()
            if self.dataset_prefix:
                self.meta["markov_check"] = "indexed dataset: the DDP peer checks its sample index " \
                    "against cmpi-train's cache (summary.json data_check)"
            else:
                self.check_markov()
            if os.access(self.trainer, os.X_OK):
                self.check_init()
            self.write_meta()

    def tokens_per_step(self):
        cfg = config_with_sets(self.config, self.common_sets())
        return int(cfg["training"]["global_batch"]) * int(cfg["model"]["seq_len"])

    def default_reference(self):
        """The time-to-target reference: the first layout's uncompressed cmpi-train cell."""
        return f"cmpi/{self.layouts[0]['name']}/none" if self.layouts else ""

    def prepare_dataset(self):
        """--dataset: an indexed dataset both systems read; `markov` writes one (OUT/data/markov)
        from the config's Markov chain (make_markov_dataset.py), large enough for --steps."""
        a = self.args
        if not a.dataset:
            return
        if a.dataset != "markov":
            prefix = os.path.abspath(a.dataset)
            for ext in (".bin", ".idx"):
                if not os.path.exists(prefix + ext):
                    sys.exit(f"run_bench: --dataset {a.dataset}: {prefix + ext} not found")
            self.dataset_prefix = prefix
            return
        import yaml

        with open(self.config) as f:
            cfg = yaml.safe_load(f)
        m, d, t = cfg["model"], cfg.get("data", {}), cfg["training"]
        tokens = a.steps * int(t["global_batch"]) * (int(m["seq_len"]) + 1)
        documents = max(256, -(-tokens * 5 // 4 // 1024))  # 25 % more than one epoch needs
        prefix = os.path.join(self.out, "data", "markov")
        cmd = [a.python, os.path.join(HERE, "make_markov_dataset.py"), "--prefix", prefix,
               "--documents", str(documents), "--doc-tokens", "1024", "--vocab", str(m["vocab_size"]),
               "--branching", str(d.get("branching", 4)), "--concentration", str(d.get("concentration", 1.0)),
               "--seed", str(d.get("seed", 42))]
        if not os.path.exists(prefix + ".idx"):
            subprocess.run(cmd, check=True)
        self.dataset_prefix = prefix

    def check_init(self):
        """Runs cmpi-train for one step at lr 1e-30 (weights unchanged but for zero biases, which
        become ~1e-30) with --dump-tensors and compares the peer's port of its initialisation
        (cmpi_init.py) with the dumped weights. OUT/init_check.txt says MATCH or what differs."""
        import numpy as np
        import struct
        import yaml

        import cmpi_init

        work = os.path.join(self.out, "init_check")
        cmd = ["mpirun", "-np", "1", self.trainer, "--config", self.config]
        for s in self.common_sets() + ["training.steps=1", "training.warmup_steps=0", "training.lr=1e-30",
                                       "training.min_lr=1e-30", "parallel.data=1", "parallel.tensor=1",
                                       "parallel.pipeline=1", "parallel.zero_stage=0",
                                       f"run.dir={work}", "run.name=init", "training.global_batch=" +
                                       str(self.resolved["training"]["micro_batch"])]:
            cmd += ["--set", s]
        cmd += ["--dump-tensors", os.path.join(work, "dump")]
        status = "not checked"
        try:
            os.makedirs(work, exist_ok=True)
            rc = self.run_logged(cmd, os.path.join(work, "log.txt"), 300)
            if rc != 0:
                raise RuntimeError(f"cmpi-train exited {rc} (log {work}/log.txt)")
            raw = open(os.path.join(work, "dump", "parameters.f32"), "rb").read()
            ndim = struct.unpack_from("<I", raw, 16)[0]
            values = np.frombuffer(raw, np.float32, offset=20 + 8 * ndim)
            at, differ, count = 0, [], 0
            for line in open(os.path.join(work, "dump", "parameters.txt")):
                name, *shape = line.split()
                shape = tuple(int(x) for x in shape)
                n = int(np.prod(shape))
                mine = cmpi_init.initial_tensor(name, shape, self.resolved["model"], self.resolved["run"]["seed"])
                theirs = values[at:at + n].reshape(shape)
                at += n
                count += 1
                # Zero biases moved by the 1e-30 step; everything else must be bit-identical.
                if not (np.array_equal(mine, theirs) or (not mine.any() and np.abs(theirs).max() < 1e-28)):
                    differ.append(f"{name} (max |diff| {float(np.abs(mine - theirs).max()):.3g})")
            status = (f"MATCH: {count} parameters, {at} values" if not differ else
                      f"DIFFER in {len(differ)} of {count} parameters: {', '.join(differ[:5])}")
        except (OSError, RuntimeError, ValueError) as e:
            status = f"not checked: {e}"
        with open(os.path.join(self.out, "init_check.txt"), "w") as f:
            f.write(status + "\n")
        self.meta["init_check"] = status
        print(f"run_bench: initial weights, DDP peer vs cmpi-train: {status}")

    def write_meta(self):
        with open(os.path.join(self.out, "meta.json"), "w") as f:
            json.dump(self.meta, f, indent=1)
            f.write("\n")

    def resolve_config(self):
        """The DDP peer reads the same resolved config as cmpi-train (dp = all nodes, no TP/PP)."""
        sets = self.common_sets() + ["parallel.data=auto", "parallel.tensor=1", "parallel.pipeline=1",
                                     "parallel.zero_stage=0"]
        cmd = [self.trainer, "--config", self.config]
        for s in sets:
            cmd += ["--set", s]
        cmd.append("--print-config")
        if not os.access(self.trainer, os.X_OK):  # DDP cells only, no trainer build: apply the sets here
            import yaml

            cfg = config_with_sets(self.config, sets)
            with open(self.resolved_config, "w") as f:
                yaml.safe_dump(cfg, f)
            self.meta["ddp_config_command"] = f"{self.config} with {' '.join(sets)} (no cmpi-train to resolve it)"
            return
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
        if r.returncode != 0 or "model:" not in r.stdout:
            sys.exit(f"run_bench: could not resolve the config for the DDP peer:\n"
                     f"{' '.join(cmd)}\n{r.stderr}")
        with open(self.resolved_config, "w") as f:
            f.write(r.stdout)
        import yaml

        self.resolved = yaml.safe_load(r.stdout)
        self.meta["ddp_config_command"] = " ".join(shlex.quote(x) for x in cmd)

    def check_markov(self):
        """Builds markov_check (C++, the trainer's own source) and compares the Python port."""
        import yaml

        with open(self.resolved_config) as f:
            cfg = yaml.safe_load(f)
        m, d, t = cfg["model"], cfg["data"], cfg["training"]
        exe = os.path.join(self.out, "markov_check")
        ref = os.path.join(self.out, "markov_reference.json")
        log = os.path.join(self.out, "markov_check.txt")
        build = ["g++", "-O2", "-std=c++17", "-I", ROOT, "-o", exe,
                 os.path.join(HERE, "markov_check.cpp"), os.path.join(ROOT, "data", "markov_source.cpp")]
        status = "not checked"
        try:
            subprocess.run(build, check=True, capture_output=True, text=True)
            with open(ref, "w") as f:
                subprocess.run([exe, str(m["vocab_size"]), str(d["branching"]), repr(float(d["concentration"])),
                                str(d["seed"]), str(m["seq_len"] + 1), "3", str(t["global_batch"])],
                               stdout=f, check=True)
            r = subprocess.run([self.args.python, os.path.join(HERE, "markov_source.py"), "--check", ref],
                               capture_output=True, text=True)
            status = (r.stdout + r.stderr).strip()
        except (OSError, subprocess.CalledProcessError) as e:
            status = f"not checked: {e}"
        with open(log, "w") as f:
            f.write(status + "\n")
        self.meta["markov_check"] = status
        print(f"run_bench: {status}")

    # -- the matrix ------------------------------------------------------------------------
    def record(self, entry):
        with open(self.index_file, "a") as f:
            f.write(json.dumps(entry) + "\n")

    def run_cell(self, link, rep, cell):
        name = f"{link}__{cell['id'].replace('/', '_')}__r{rep}"
        log_path = os.path.join(self.logs_dir, name + ".log")
        if cell["system"] == "cmpi-train":
            inner = self.cmpi_command(cell, name)
        else:
            inner = self.ddp_command(cell, name)
        lay = self.args.nodes, cell["layout"]["per_node"]
        cmd = ["bash", CLUSTER, "run", str(lay[0]), str(lay[1]), *self.args.mpirun_opt, "--", *inner]
        entry = {"link": link, "rep": rep, "cell": cell["id"], "system": cell["system"],
                 "layout": cell["layout"]["name"], "policy": cell["label"], "run_dir":
                 os.path.join(self.runs_dir, name), "log": log_path, "load_before": loadavg(),
                 "command": " ".join(shlex.quote(c) for c in cmd)}
        start = time.time()
        if self.schedule:
            self.set_rate(link)  # every run starts on the session's link
            scheduler = LinkScheduler(self.schedule, os.path.join(entry["run_dir"], "metrics.jsonl"),
                                      self.set_rate)
            with scheduler:
                rc = self.run_logged(cmd, log_path, self.args.timeout)
            entry["link_changes"] = scheduler.changes
        else:
            rc = self.run_logged(cmd, log_path, self.args.timeout)
        if rc != 0 and cell["system"] == "pytorch-ddp" and "Address already in use" in open(log_path).read():
            inner = self.ddp_command(cell, name)  # rendezvous port taken: once more on another port
            cmd = cmd[:cmd.index("--") + 1] + inner
            entry["command"] = " ".join(shlex.quote(c) for c in cmd)
            rc = self.run_logged(cmd, log_path, self.args.timeout)
        entry.update(rc=rc, wall_s=round(time.time() - start, 2), load_after=loadavg())
        summary = os.path.join(entry["run_dir"], "summary.json")
        if rc == 0 and cell["system"] == "cmpi-train" and os.path.exists(summary):
            with open(summary) as f:
                self.params_seen = self.params_seen or int(json.load(f).get("parameters", 0))
        self.record(entry)
        status = "ok" if rc == 0 else f"FAILED rc={rc} (log {log_path})"
        print(f"  [{link} r{rep}] {cell['id']:<28} {entry['wall_s']:7.1f} s  load {entry['load_after']}  {status}",
              flush=True)

    def session(self, link, rep, cells):
        """One cluster session under the shared lock: up, every cell, down (always)."""
        lock = open(self.args.lock, "a")
        try:
            t0 = time.time()
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                # Another session holds the cluster; say so rather than sit silent (a
                # `flock` around this script on the same file would wait forever).
                print(f"  waiting for {self.args.lock}: another process holds the emulated "
                      "cluster (do not wrap this script in flock on the same file)", flush=True)
                fcntl.flock(lock, fcntl.LOCK_EX)
            waited = time.time() - t0
            if waited > 1:
                print(f"  (waited {waited:.0f} s for {self.args.lock})")
            up = ["up", str(self.args.nodes), "--rate", link]
            if self.args.delay:
                up += ["--delay", self.args.delay]
            try:
                self.cluster(*up)
            except RuntimeError as e:
                for cell in cells:  # every cell of this session is recorded as failed
                    self.record({"link": link, "rep": rep, "cell": cell["id"], "system": cell["system"],
                                 "layout": cell["layout"]["name"], "policy": cell["label"], "rc": -1,
                                 "error": str(e), "run_dir": "", "log": "", "command": ""})
                print(f"  [{link} r{rep}] cluster up FAILED: {e}")
                return
            try:
                for cell in cells:
                    self.run_cell(link, rep, cell)
            finally:
                self.kill_child()
                self.cluster("down", check=False)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            lock.close()

    def run(self):
        a = self.args
        if a.report_only:
            return
        if os.path.exists(self.index_file) and not a.resume:
            os.rename(self.index_file, self.index_file + f".old{int(time.time())}")
        done = set()
        if a.resume and os.path.exists(self.index_file):
            with open(self.index_file) as f:
                for line in f:
                    e = json.loads(line)
                    if e.get("rc") == 0:
                        done.add((e["link"], e["rep"], e["cell"]))
        for rep in range(1, a.reps + 1):
            links = self.links if rep % 2 else list(reversed(self.links))
            for li, link in enumerate(links):
                cells = self.cells if (rep + li) % 2 else list(reversed(self.cells))
                cells = [c for c in cells if (link, rep, c["id"]) not in done]
                if not cells:
                    continue
                print(f"run_bench: repetition {rep}/{a.reps}, link {link}, {len(cells)} cells "
                      f"({datetime.datetime.utcnow():%H:%M:%S} UTC)", flush=True)
                self.session(link, rep, cells)

    def finish(self):
        self.meta["load_end"] = loadavg()
        self.meta["finished"] = datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M:%S UTC")
        self.write_meta()
        print(f"run_bench: load average at end {self.meta['load_end']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"),
                    help="build directory holding trainer/cmpi-train (default: %(default)s)")
    ap.add_argument("--baseline", default="", metavar="PATH",
                    help="another cmpi-train binary (e.g. a copy of the build before a change): every "
                         "cmpi-train cell also runs on it, as policy LABEL-baseline, in the same rotation")
    ap.add_argument("--out", default=None, help="output directory (default: runs/bench-train-<UTC time>)")
    ap.add_argument("--config", default=os.path.join(HERE, "gpt-3m.yaml"), help="base config")
    ap.add_argument("--links", default=DEFAULT_LINKS, help="comma list of tc rates (default: %(default)s)")
    ap.add_argument("--delay", default="", help="one-way delay per node uplink (tc syntax, e.g. 1ms)")
    ap.add_argument("--link-schedule", default="", metavar="STEP:RATE,...",
                    help="change every node link during each run: after STEP steps to RATE, e.g. "
                         "'10:100mbit,20:1gbit' (each run starts at its --links rate); the report "
                         "then adds whole-run times and a step-time plot")
    ap.add_argument("--policies", default=DEFAULT_POLICIES,
                    help="comma list: presets, or labels from --policy-def (default: %(default)s)")
    ap.add_argument("--policy-def", action="append", default=[], metavar="LABEL=K=V;K=V",
                    help="a named policy as --set overrides, e.g. 'zfp12=compression.rules=[...]'")
    ap.add_argument("--layouts", default=DEFAULT_LAYOUTS,
                    help="comma list of dpN[tpN][ppN][zN] (default: %(default)s)")
    ap.add_argument("--ddp", default=DEFAULT_DDP,
                    help="DDP peer hooks: none,fp16,powersgd; empty to skip (default: %(default)s)")
    ap.add_argument("--nodes", type=int, default=4, help="emulated nodes (default: %(default)s)")
    ap.add_argument("--steps", type=int, default=30, help="optimizer steps per run (default: %(default)s)")
    ap.add_argument("--warmup", type=int, default=5,
                    help="first steps left out of the timing medians (default: %(default)s)")
    ap.add_argument("--lr-warmup", type=int, default=None,
                    help="training.warmup_steps override (default: the config's)")
    ap.add_argument("--reps", type=int, default=3, help="repetitions of the whole matrix (default: %(default)s)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="extra cmpi-train --set override for every cell (also read by the DDP peer)")
    ap.add_argument("--mpirun-opt", action="append", default=[], metavar="OPT",
                    help="extra option for emulated_cluster.sh run (repeat per word)")
    ap.add_argument("--powersgd-rank", type=int, default=4)
    ap.add_argument("--powersgd-start", type=int, default=None,
                    help="PowerSGD start_powerSGD_iter (default: --warmup, at least 2)")
    ap.add_argument("--dataset", default="", metavar="PREFIX|markov",
                    help="both systems train on this indexed dataset (PREFIX.bin/.idx, data.kind indexed, "
                         "split [1, 0]); 'markov' writes one from the config's Markov chain into OUT/data "
                         "(default with --target-step: markov)")
    ap.add_argument("--target-step", type=int, default=0,
                    help="time-to-target mode: L* = the reference cell's smoothed loss at this step; "
                         "the report adds each cell's time to L* (time_to_target.csv/.md/.png)")
    ap.add_argument("--target-window", type=int, default=5,
                    help="smoothing of the loss for L* and for reaching it: mean of the last N steps "
                         "(default: %(default)s)")
    ap.add_argument("--target-reference", default="",
                    help="cell whose loss defines L* (default: cmpi/<first layout>/none)")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per run (default: %(default)s)")
    ap.add_argument("--lock", default="/tmp/cmpi-cluster.lock", help="cluster lock (default: %(default)s)")
    ap.add_argument("--python", default=os.environ.get("CMPI_PYTHON", sys.executable),
                    help="python with the project's torch for the DDP peer "
                         "(default: $CMPI_PYTHON, else this interpreter: %(default)s)")
    ap.add_argument("--resume", action="store_true", help="skip runs already ok in OUT/runs.jsonl")
    ap.add_argument("--report-only", action="store_true", help="only rebuild the CSV and plots from OUT")
    args = ap.parse_args()
    if args.out is None:
        if args.report_only:
            ap.error("--report-only needs --out")
        args.out = os.path.join(ROOT, "runs", "bench-train-" + datetime.datetime.utcnow().strftime("%Y%m%d-%H%M%S"))
    if args.powersgd_start is None:
        args.powersgd_start = max(2, args.warmup)
    if args.warmup >= args.steps:
        ap.error("--warmup must be below --steps")
    if args.target_step:
        if not args.target_window <= args.target_step <= args.steps:
            ap.error("--target-step must lie in [--target-window, --steps]")
        args.dataset = args.dataset or "markov"
    if os.geteuid() != 0 and not args.report_only:
        ap.error("needs root (the emulated cluster creates network namespaces)")

    runner = Runner(args)
    if args.report_only:
        sys.exit(report.main(runner.out))
    signal.signal(signal.SIGTERM, on_signal)
    runner.prepare()
    try:
        runner.run()
    except (KeyboardInterrupt, Interrupted) as e:
        print(f"run_bench: interrupted ({e}); the cluster was taken down; partial results follow")
    finally:
        runner.finish()
    sys.exit(report.main(runner.out))


if __name__ == "__main__":
    main()
