"""Bit-exact Python port of data/markov_source.{h,cpp} (the synthetic Markov token source).

The C++ source builds its chain with std::mt19937_64, std::uniform_int_distribution<int64_t> and
std::gamma_distribution<double> from libstdc++ (GCC 12, Debian 12) and draws sequence (step, index)
from a std::mt19937_64 seeded with SplitMix64(seed ^ SplitMix64(step * 0x100000001b3 + index)).
This file reimplements exactly those algorithms (Matsumoto-Nishimura MT19937-64, libstdc++'s
Lemire downscaling for uniform_int_distribution, generate_canonical<double, 53>, the Marsaglia
polar normal with its cached second value, Marsaglia-Tsang gamma) with the same floating-point
operation order, so the DDP peer sees the same token stream as cmpi-train.

`markov_check.cpp` (built by run_bench.sh with g++ against data/markov_source.cpp) prints
reference tokens; `python3 markov_source.py --check REFERENCE.json` compares them.

Runs with the standard library alone (numpy optional, only to speed up the power iteration).
"""

import bisect
import json
import math
import sys

MASK64 = (1 << 64) - 1


def splitmix64(x):
    z = (x + 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


class MT19937_64:
    """std::mt19937_64 (the standard's parameters and seeding)."""

    N, M = 312, 156
    MATRIX_A = 0xB5026F5AA96619E9
    UPPER, LOWER = 0xFFFFFFFF80000000, 0x7FFFFFFF

    def __init__(self, seed):
        mt = [0] * self.N
        mt[0] = seed & MASK64
        for i in range(1, self.N):
            prev = mt[i - 1]
            mt[i] = (6364136223846793005 * (prev ^ (prev >> 62)) + i) & MASK64
        self.mt = mt
        self.index = self.N

    def _twist(self):
        mt, n, m = self.mt, self.N, self.M
        upper, lower, a = self.UPPER, self.LOWER, self.MATRIX_A
        for i in range(n):
            y = (mt[i] & upper) | (mt[(i + 1) % n] & lower)
            v = mt[(i + m) % n] ^ (y >> 1)
            if y & 1:
                v ^= a
            mt[i] = v
        self.index = 0

    def __call__(self):
        if self.index >= self.N:
            self._twist()
        y = self.mt[self.index]
        self.index += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        y ^= y >> 43
        return y & MASK64


def canonical(rng):
    """std::generate_canonical<double, 53>(mt19937_64): one draw / 2^64, kept below 1."""
    r = float(rng()) / 18446744073709551616.0
    return r if r < 1.0 else math.nextafter(1.0, 0.0)


def uniform_int(rng, a, b):
    """std::uniform_int_distribution<int64_t>(a, b) on mt19937_64 (libstdc++ 12: Lemire)."""
    rng_range = b - a + 1
    product = rng() * rng_range
    low = product & MASK64
    if low < rng_range:
        threshold = ((-rng_range) & MASK64) % rng_range
        while low < threshold:
            product = rng() * rng_range
            low = product & MASK64
    return (product >> 64) + a


class NormalDistribution:
    """std::normal_distribution<double>(0, 1): Marsaglia polar, second value cached."""

    def __init__(self):
        self.saved = None

    def __call__(self, rng):
        if self.saved is not None:
            ret, self.saved = self.saved, None
            return ret
        while True:
            x = 2.0 * canonical(rng) - 1.0
            y = 2.0 * canonical(rng) - 1.0
            r2 = x * x + y * y
            if not (r2 > 1.0 or r2 == 0.0):
                break
        mult = math.sqrt(-2 * math.log(r2) / r2)
        self.saved = x * mult
        return y * mult


class GammaDistribution:
    """std::gamma_distribution<double>(alpha, 1): Marsaglia-Tsang as in libstdc++ 12."""

    def __init__(self, alpha):
        self.alpha = alpha
        self.malpha = alpha + 1.0 if alpha < 1.0 else alpha
        self.a1 = self.malpha - 1.0 / 3.0
        self.a2 = 1.0 / math.sqrt(9.0 * self.a1)
        self.nd = NormalDistribution()

    def __call__(self, rng):
        a1, a2 = self.a1, self.a2
        while True:
            while True:
                n = self.nd(rng)
                v = 1.0 + a2 * n
                if not v <= 0.0:
                    break
            v = v * v * v
            u = canonical(rng)
            if not (u > 1.0 - 0.0331 * n * n * n * n
                    and math.log(u) > (0.5 * n * n + a1 * (1.0 - v + math.log(v)))):
                break
        if self.alpha == self.malpha:
            return a1 * v * 1.0
        while True:
            u = canonical(rng)
            if u != 0.0:
                break
        return math.pow(u, 1.0 / self.alpha) * a1 * v * 1.0


def _uniform01(rng):
    return float(rng() >> 11) * (2.0 ** -53)


class MarkovSource:
    def __init__(self, vocab_size, branching, concentration, seed):
        if vocab_size < 2:
            raise ValueError("markov source: vocab_size must be >= 2")
        if branching < 1 or branching > vocab_size:
            raise ValueError("markov source: branching must be in [1, vocab_size]")
        if not concentration > 0:
            raise ValueError("markov source: concentration must be > 0")
        self.vocab, self.branching, self.seed = vocab_size, branching, seed & MASK64
        rng = MT19937_64(splitmix64(self.seed))
        gamma = GammaDistribution(float(concentration))
        tokens = list(range(vocab_size))
        successors = [0] * (vocab_size * branching)
        cumulative = [0.0] * (vocab_size * branching)
        for i in range(vocab_size):
            for j in range(branching):  # partial Fisher-Yates over a persistent permutation
                k = uniform_int(rng, j, vocab_size - 1)
                tokens[j], tokens[k] = tokens[k], tokens[j]
                successors[i * branching + j] = tokens[j]
            probs = []
            total = 0.0
            for _ in range(branching):
                p = gamma(rng) + 1e-12
                probs.append(p)
                total += p
            running = 0.0
            for j in range(branching):
                running += probs[j] / total
                cumulative[i * branching + j] = running
            cumulative[i * branching + branching - 1] = 1.0
        self.successors, self.cumulative = successors, cumulative
        pi = self._stationary()
        self.stationary = pi
        running = 0.0
        stat_cum = []
        for value in pi:  # std::partial_sum: sequential
            running += value
            stat_cum.append(running)
        stat_cum[-1] = 1.0
        self.stationary_cumulative = stat_cum
        entropy = 0.0
        for i in range(vocab_size):
            previous = row = 0.0
            for j in range(branching):
                c = cumulative[i * branching + j]
                p = c - previous
                previous = c
                if p > 0:
                    row -= p * math.log(p)
            entropy += pi[i] * row
        self.entropy_rate = entropy

    def _stationary(self):
        """Power iteration of the lazy chain, in the C++ loop's exact operation order."""
        v, b = self.vocab, self.branching
        probs = []
        for i in range(v):
            previous = 0.0
            for j in range(b):
                c = self.cumulative[i * b + j]
                probs.append(c - previous)
                previous = c
        try:
            import numpy as np
        except ImportError:
            np = None
        if np is not None:
            succ = np.asarray(self.successors, dtype=np.int64)
            p = np.asarray(probs, dtype=np.float64)
            pi = np.full(v, 1.0 / float(v))
            for _ in range(10000):
                nxt = 0.5 * pi
                # (0.5 * pi[i]) * p, accumulated in (i, j) order: ufunc.at is unbuffered, in order
                np.add.at(nxt, succ, np.repeat(0.5 * pi, b) * p)
                change = np.cumsum(np.abs(nxt - pi))[-1]  # sequential sum, as the C++ loop
                pi = nxt
                if change < 1e-13:
                    break
            return [float(x) for x in pi]
        pi = [1.0 / float(v)] * v
        for _ in range(10000):
            nxt = [0.5 * x for x in pi]
            for i in range(v):
                half = 0.5 * pi[i]
                for j in range(b):
                    nxt[self.successors[i * b + j]] += half * probs[i * b + j]
            change = 0.0
            for i in range(v):
                change += abs(nxt[i] - pi[i])
            pi = nxt
            if change < 1e-13:
                break
        return pi

    def sample(self, step, index, length):
        """Tokens of sequence (step, index), as MarkovSource::sample writes them."""
        if length <= 0:
            return []
        seed = splitmix64(self.seed ^ splitmix64((step * 0x100000001B3 + index) & MASK64))
        rng = MT19937_64(seed)
        u = _uniform01(rng)
        token = min(bisect.bisect_right(self.stationary_cumulative, u), self.vocab - 1)
        out = [token]
        b, cum, succ = self.branching, self.cumulative, self.successors
        for _ in range(1, length):
            u = _uniform01(rng)
            base = token * b
            j = 0
            while j + 1 < b and u >= cum[base + j]:
                j += 1
            token = succ[base + j]
            out.append(token)
        return out


def check(reference_path):
    """Compares against the JSON written by markov_check (C++). Returns 0 when all match."""
    with open(reference_path) as f:
        ref = json.load(f)
    src = MarkovSource(ref["vocab_size"], ref["branching"], ref["concentration"], ref["seed"])
    bad = 0
    if abs(src.entropy_rate - ref["entropy_rate"]) > 1e-12 * max(1.0, abs(ref["entropy_rate"])):
        print(f"entropy rate differs: python {src.entropy_rate!r} c++ {ref['entropy_rate']!r}")
        bad += 1
    total = 0
    for seq in ref["sequences"]:
        got = src.sample(seq["step"], seq["index"], len(seq["tokens"]))
        total += len(got)
        if got != seq["tokens"]:
            first = next(i for i, (a, c) in enumerate(zip(got, seq["tokens"])) if a != c)
            print(f"sequence (step {seq['step']}, index {seq['index']}) differs at token {first}")
            bad += 1
    status = "MATCH" if bad == 0 else "MISMATCH"
    print(f"markov source {status}: {len(ref['sequences'])} sequences, {total} tokens, "
          f"entropy rate {src.entropy_rate:.6f} (c++ {ref['entropy_rate']:.6f}), vocab "
          f"{ref['vocab_size']}, branching {ref['branching']}, seed {ref['seed']}")
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        sys.exit(check(sys.argv[2]))
    print("usage: markov_source.py --check REFERENCE.json", file=sys.stderr)
    sys.exit(2)
