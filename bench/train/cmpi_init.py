"""cmpi-train's initial weights, computed in Python (numpy), for the DDP peer.

A port of models/param_layout.cpp: element i (row-major in the full tensor) of a normally
initialised parameter is counter_normal(parameter_seed(run_seed, name), i) * std, where
  parameter_seed(s, name) = splitmix64(s ^ splitmix64(fnv1a64(name)))
  counter_normal(seed, i) = Box-Muller on the two 32-bit halves of splitmix64(seed ^ splitmix64(i))
(u1 = (hi + 1) / 2^32 in (0, 1], u2 = lo / 2^32), computed in double and rounded to float, as the
C++ does. LayerNorm weights are ones, biases zeros. So the peer starts from exactly cmpi-train's
weights (up to the last bit of libm's log/cos, which numpy and glibc share on this platform;
bench/train/run_bench.py checks the port against a cmpi-train dump: OUT/init_check.txt).

Names are cmpi-train's (block3.attention.qkv.weight); `cmpi_name` maps the peer's module names
(blocks.3.attention.qkv.weight) onto them.
"""

import math
import re

import numpy as np

MASK64 = (1 << 64) - 1
GAMMA = np.uint64(0x9E3779B97F4A7C15)


def splitmix64_scalar(x):
    z = (x + 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def splitmix64_array(x):
    """Elementwise splitmix64 on a uint64 array (numpy wraps modulo 2^64)."""
    with np.errstate(over="ignore"):
        z = x + GAMMA
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def parameter_seed(run_seed, name):
    h = 0xCBF29CE484222325
    for c in name.encode():
        h = ((h ^ c) * 0x100000001B3) & MASK64
    return splitmix64_scalar((run_seed ^ splitmix64_scalar(h)) & MASK64)


def counter_normal(seed, count):
    """counter_normal(seed, i) for i in [0, count), as float32."""
    index = np.arange(count, dtype=np.uint64)
    bits = splitmix64_array(np.uint64(seed) ^ splitmix64_array(index))
    u1 = ((bits >> np.uint64(32)).astype(np.float64) + 1.0) / 4294967296.0
    u2 = (bits & np.uint64(0xFFFFFFFF)).astype(np.float64) / 4294967296.0
    return (np.sqrt(-2.0 * np.log(u1)) * np.cos(6.283185307179586 * u2)).astype(np.float32)


def cmpi_name(torch_name):
    """The peer's 'blocks.3.x' -> cmpi-train's 'block3.x'."""
    return re.sub(r"^blocks\.(\d+)\.", r"block\1.", torch_name)


def initial_tensor(name, shape, model, run_seed):
    """cmpi-train's initial value of parameter `name` (cmpi-train's name) of `shape`, for the
    GPT-2 style model (model.init gpt2): N(0, init_std) for embeddings, the head and the input
    projections, N(0, init_std / sqrt(2 layers)) for the residual output projections."""
    count = int(np.prod(shape))
    if name.endswith(".bias"):
        return np.zeros(shape, np.float32)
    if name.endswith(("ln1.weight", "ln2.weight")) or name == "final_norm.weight":
        return np.ones(shape, np.float32)
    std = float(model["init_std"])
    if name.endswith(("attention.out.weight", "fc_out.weight")):
        std = std / math.sqrt(2.0 * float(model["layers"]))
    values = counter_normal(parameter_seed(int(run_seed), name), count)
    # float(double(counter_normal) * std): the product in double, rounded once.
    return (values.astype(np.float64) * std).astype(np.float32).reshape(shape)
