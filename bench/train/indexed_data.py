"""cmpi-train's training sequences from an indexed dataset (data.kind indexed), in Python.

A port, for the DDP peer, of what data/indexed_token_source.cpp does with ONE dataset
(data.paths of length 1): read PREFIX.idx / PREFIX.bin (Megatron/GPT-NeoX "mmap" layout,
data/indexed_dataset_format.h), cut the documents into train/valid by data.split (Megatron's
rounding, data/gpt_sample_index.cpp split_documents), build the train split's GPT sample index
(document index repeated per epoch and shuffled, sample index walking seq_len tokens, shuffle
index; both shuffles Fisher-Yates on a SplitMix64 stream with unbiased bounded draws, seeded
data.seed * 1000003 + 2 * dataset + split), and return global sequence g = batch * global_batch +
position as sample shuffle[g] of seq_len + 1 tokens. With one dataset the blend is the identity.

`check_against_cache` compares the index with the cache file cmpi-train writes next to the
dataset (data/gpt_sample_index_cache.h: "CMPIGSI1", key, three int64 arrays, FNV-1a digest), when
that file exists: the peer then knows it reads cmpi-train's exact token order.
"""

import os
import struct

import numpy as np

MASK64 = (1 << 64) - 1
DOCUMENT_SHUFFLE = 0x646F63756D656E74
SAMPLE_SHUFFLE = 0x73616D706C657321
DTYPES = {4: np.int32, 8: np.uint16}


def fnv1a(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & MASK64
    return h


class IndexedDataset:
    def __init__(self, prefix):
        self.prefix = prefix
        self.idx_path, self.bin_path = prefix + ".idx", prefix + ".bin"
        with open(self.idx_path, "rb") as f:
            self.idx_bytes = f.read()
        b = self.idx_bytes
        if b[:9] != b"MMIDIDX\0\0" or struct.unpack_from("<Q", b, 9)[0] != 1:
            raise ValueError(f"{self.idx_path}: not a version-1 MMIDIDX index")
        code = b[17]
        if code not in DTYPES:
            raise ValueError(f"{self.idx_path}: dtype code {code} is not a token type (4 int32, 8 uint16)")
        self.dtype = DTYPES[code]
        n, d = struct.unpack_from("<QQ", b, 18)
        at = 34
        self.sizes = np.frombuffer(b, np.int32, n, at).astype(np.int64)
        at += 4 * n
        self.pointers = np.frombuffer(b, np.int64, n, at)
        at += 8 * n
        self.doc_index = np.frombuffer(b, np.int64, d, at)
        self.tokens = np.memmap(self.bin_path, dtype=self.dtype, mode="r")
        self.bin_size = os.path.getsize(self.bin_path)

    def documents(self):
        return len(self.doc_index) - 1

    def sequence(self, s):
        start = int(self.pointers[s]) // np.dtype(self.dtype).itemsize
        return self.tokens[start:start + int(self.sizes[s])]


def split_documents(documents, ratios):
    """Megatron's rule: boundary k = llround(documents x cumulative ratio), the last = documents."""
    total = float(sum(ratios))
    ranges, cumulative, begin = [], 0.0, 0
    for k, r in enumerate(ratios):
        cumulative += r / total
        end = documents if k + 1 == len(ratios) else int(cumulative * documents + 0.5)
        end = min(max(end, begin), documents)
        ranges.append((begin, end))
        begin = end
    return ranges


class _SplitMix:
    def __init__(self, seed):
        self.state = seed & MASK64

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def bounded(self, bound):
        limit = MASK64 - MASK64 % bound
        while True:
            x = self.next()
            if x < limit:
                return x % bound


def _shuffle(values, seed):
    rng = _SplitMix(seed)
    for i in range(len(values), 1, -1):
        j = rng.bounded(i)
        values[i - 1], values[j] = values[j], values[i - 1]


def build_sample_index(lengths, first_sequence, seq_len, num_samples, seed):
    """data/gpt_sample_index.cpp build_gpt_sample_index: (document, sample, shuffle) indices."""
    tokens_per_epoch = int(sum(lengths))
    if tokens_per_epoch == 0:
        raise ValueError("the split holds no tokens")
    epochs = (num_samples * seq_len + 1 + tokens_per_epoch - 1) // tokens_per_epoch
    document_index = [first_sequence + s for _ in range(epochs) for s in range(len(lengths))]
    _shuffle(document_index, seed ^ DOCUMENT_SHUFFLE)
    length_at = [int(lengths[d - first_sequence]) for d in document_index]
    sample_index = [0] * (2 * (num_samples + 1))
    position = 0
    while length_at[position] == 0:
        position += 1
    offset = 0
    sample_index[0] = position
    for sample in range(1, num_samples + 1):
        remaining = seq_len
        while True:
            left = length_at[position] - 1 - offset
            if remaining <= left:
                offset += remaining
                break
            remaining -= left + 1
            offset = 0
            position += 1
            while length_at[position] == 0:
                position += 1
            if remaining == 0:
                break
        sample_index[2 * sample] = position
        sample_index[2 * sample + 1] = offset
    shuffle_index = list(range(num_samples))
    _shuffle(shuffle_index, seed ^ SAMPLE_SHUFFLE)
    return document_index, sample_index, shuffle_index


class IndexedTrainSource:
    """The train split of data section `data` as cmpi-train reads it (one dataset)."""

    def __init__(self, data, seq_len, global_batch, steps, base_dir="."):
        paths = data.get("paths")
        if isinstance(paths, str):
            paths = [paths]
        if not paths or len(paths) != 1:
            raise ValueError(f"data.paths: the DDP peer reads exactly one dataset, got {paths!r}")
        prefix = paths[0] if os.path.isabs(paths[0]) else os.path.join(base_dir, paths[0])
        self.dataset = IndexedDataset(prefix)
        self.prefix, self.cache_dir = prefix, data.get("cache_dir") or ""
        split = [float(x) for x in data.get("split", [0.98, 0.02])]
        self.documents = split_documents(self.dataset.documents(), split)[0]
        doc = self.dataset.doc_index
        first, last = (int(doc[self.documents[0]]), int(doc[self.documents[1]])) \
            if self.documents[1] > self.documents[0] else (0, 0)
        self.seq_len, self.global_batch = int(seq_len), int(global_batch)
        self.num_samples = int(steps) * self.global_batch
        self.seed = (int(data.get("seed", 1234)) * 1000003 + 0 * 2 + 0) & MASK64
        lengths = self.dataset.sizes[first:last]
        self.document_index, self.sample_index, self.shuffle_index = build_sample_index(
            lengths, first, self.seq_len, self.num_samples, self.seed)

    def sample(self, batch, position):
        """seq_len + 1 tokens of sequence `position` of global batch `batch`."""
        g = batch * self.global_batch + position
        s = self.shuffle_index[g]
        first, offset = self.sample_index[2 * s], self.sample_index[2 * s + 1]
        last, last_offset = self.sample_index[2 * s + 2], self.sample_index[2 * s + 3]
        parts = []
        for p in range(first, last + 1):
            tokens = self.dataset.sequence(self.document_index[p])
            end = last_offset + 1 if p == last else len(tokens)
            parts.append(np.asarray(tokens[offset:end], dtype=np.int64))
            offset = 0
        out = np.concatenate(parts)
        if len(out) != self.seq_len + 1:
            raise RuntimeError(f"sample {g}: {len(out)} tokens, expected {self.seq_len + 1}")
        return out

    def cache_key(self):
        """data/gpt_sample_index_cache.cpp gpt_sample_index_key of the train split."""
        idx = self.dataset.idx_bytes
        return (f"gpt-sample-index v1; idx fnv1a {fnv1a(idx):016x} ({len(idx)} bytes); bin "
                f"{self.dataset.bin_size} bytes; split train documents [{self.documents[0]}, "
                f"{self.documents[1]}); seq_len {self.seq_len}; samples {self.num_samples}; "
                f"seed {self.seed}")

    def cache_path(self, key):
        directory = self.cache_dir or os.path.dirname(self.prefix)
        name = f"{os.path.basename(self.prefix)}.train.{fnv1a(key.encode()):016x}.samples"
        return os.path.join(directory, name)

    def check_against_cache(self):
        """'MATCH (path)', 'DIFFER (path): what', or 'not checked: why'."""
        key = self.cache_key()
        path = self.cache_path(key)
        if not os.path.exists(path):
            return f"not checked: no sample index cache {path} yet (cmpi-train writes it)"
        with open(path, "rb") as f:
            b = f.read()
        if b[:8] != b"CMPIGSI1":
            return f"DIFFER ({path}): bad magic"
        (klen,) = struct.unpack_from("<Q", b, 8)
        stored = b[16:16 + klen].decode()
        if stored != key:
            return f"DIFFER ({path}): key {stored!r}, expected {key!r}"
        at = 16 + klen
        n = struct.unpack_from("<QQQ", b, at)
        at += 24
        arrays = []
        for count in n:
            arrays.append(np.frombuffer(b, np.int64, count, at))
            at += 8 * count
        for name, mine, theirs in zip(("document", "sample", "shuffle"),
                                      (self.document_index, self.sample_index, self.shuffle_index),
                                      arrays):
            if len(mine) != len(theirs) or not np.array_equal(np.asarray(mine, np.int64), theirs):
                return f"DIFFER ({path}): {name} index"
        return f"MATCH ({path})"
