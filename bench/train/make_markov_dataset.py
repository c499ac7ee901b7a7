#!/usr/bin/env python3
"""Writes the synthetic Markov chain of data.kind markov as an indexed dataset (PREFIX.bin/.idx).

Document d is MarkovSource.sample(d, 0, --doc-tokens) of bench/train/markov_source.py (the
bit-exact port of data/markov_source.cpp), so the chain, and its entropy floor, are those of a
config's data section (vocab, branching, concentration, seed). Tokens are uint16, in the
Megatron/GPT-NeoX "mmap" layout of data/indexed_dataset_format.h (one sequence per document).
The time-to-target benchmark (bench/train/README.md) trains cmpi-train and the DDP peer on such a
file, so both read the same tokens in the same order (data.kind indexed). Writes PREFIX.json
with the chain's parameters and entropy floor.

  bench/train/make_markov_dataset.py --prefix /tmp/markov --documents 2048 --doc-tokens 1024
"""

import argparse
import json
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from markov_source import MarkovSource  # noqa: E402


def write_indexed(prefix, documents, dtype=np.uint16):
    """PREFIX.bin (tokens back to back) and PREFIX.idx (MMIDIDX v1, dtype code 8 = uint16)."""
    sizes = np.array([len(d) for d in documents], np.int32)
    pointers = np.concatenate([[0], np.cumsum(sizes.astype(np.int64))[:-1]]) * np.dtype(dtype).itemsize
    doc_index = np.arange(len(documents) + 1, dtype=np.int64)
    tmp = prefix + ".tmp"
    with open(tmp + ".bin", "wb") as f:
        for d in documents:
            f.write(np.asarray(d, dtype).tobytes())
    with open(tmp + ".idx", "wb") as f:
        f.write(b"MMIDIDX\0\0" + struct.pack("<Q", 1) + bytes([8]))
        f.write(struct.pack("<QQ", len(documents), len(doc_index)))
        f.write(sizes.tobytes() + pointers.astype(np.int64).tobytes() + doc_index.tobytes())
    os.replace(tmp + ".bin", prefix + ".bin")
    os.replace(tmp + ".idx", prefix + ".idx")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prefix", required=True, help="writes PREFIX.bin, PREFIX.idx, PREFIX.json")
    ap.add_argument("--documents", type=int, default=2048)
    ap.add_argument("--doc-tokens", type=int, default=1024)
    ap.add_argument("--vocab", type=int, default=1024)
    ap.add_argument("--branching", type=int, default=4)
    ap.add_argument("--concentration", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=42)
    a = ap.parse_args()
    if a.vocab > 65536:
        sys.exit("make_markov_dataset: --vocab above 65536 does not fit uint16 tokens")
    if a.documents < 1 or a.doc_tokens < 2:
        sys.exit("make_markov_dataset: need --documents >= 1 and --doc-tokens >= 2")
    source = MarkovSource(a.vocab, a.branching, a.concentration, a.seed)
    docs = [source.sample(d, 0, a.doc_tokens) for d in range(a.documents)]
    os.makedirs(os.path.dirname(os.path.abspath(a.prefix)), exist_ok=True)
    write_indexed(a.prefix, docs)
    info = {"kind": "markov", "vocab_size": a.vocab, "branching": a.branching,
            "concentration": a.concentration, "seed": a.seed, "documents": a.documents,
            "doc_tokens": a.doc_tokens, "entropy_floor": source.entropy_rate}
    with open(a.prefix + ".json", "w") as f:
        json.dump(info, f, indent=1)
        f.write("\n")
    print(f"make_markov_dataset: {a.prefix}.bin/.idx: {a.documents} documents x {a.doc_tokens} tokens, "
          f"vocab {a.vocab}, entropy floor {source.entropy_rate:.4f} nats")


if __name__ == "__main__":
    main()
