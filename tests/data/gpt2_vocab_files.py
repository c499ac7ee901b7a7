#!/usr/bin/env python3
"""GPT-2's encoder.json and vocab.bpe, derived from its published BPE ranks.

The reference tests need GPT-2's vocabulary in GPT-2's own two-file layout
(encoder.json: token string -> id; vocab.bpe: the merge list), which is what
data/Gpt2Vocabulary and tokenizer.json files read. PyPI ships GPT-2's
vocabulary only as tiktoken ranks (gpt2.tiktoken: one `base64(token bytes)
rank` line per token, 50,256 tokens), so this script rebuilds the two files
from the ranks, from the published description of GPT-2's byte-level BPE:

  * A token's id is its rank. <|endoftext|> is 50256, after the last rank.
  * Token strings are the token's bytes, each written as one character of
    GPT-2's byte alphabet (bytes_to_unicode in GPT-2's encoder.py): the bytes
    that are printable Latin-1 ('!'..'~', U+00A1..U+00AC, U+00AE..U+00FF)
    stand for themselves, and the other 68, in increasing byte order, take
    U+0100, U+0101, ... so that no token string contains whitespace or a
    control character.
  * Ranks 0..255 are the single bytes. Every token of rank r >= 256 was made
    by exactly one merge, the r-th: byte-pair encoding its bytes with only
    the tokens of rank < r stops at two parts, and those two are the merge.
    vocab.bpe lists the merges in rank order, so merge i makes token 256 + i.

Usage: gpt2_vocab_files.py RANKS OUT_DIR
writes OUT_DIR/encoder.json and OUT_DIR/vocab.bpe (each written to a
temporary file and renamed, so that tests running at the same time never read
half a file). Nothing is redone when both are newer than RANKS and this
script. Only the standard library is used. Exit status 0, or 1 with a one-line
reason when the ranks are not a BPE vocabulary of this shape or the files
written are not byte for byte GPT-2's published ones.
"""
import base64
import hashlib
import json
import os
import sys

END_OF_TEXT = "<|endoftext|>"

# SHA-256 of GPT-2's published encoder.json and vocab.bpe, as tiktoken pins
# them when it fetches them (tiktoken_ext/openai_public.py, gpt2()). Equal
# hashes mean the derivation reproduced OpenAI's files exactly, key order and
# JSON spelling included, not just an equivalent vocabulary.
PUBLISHED_SHA256 = {
    "encoder.json": "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
    "vocab.bpe": "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
}


def byte_alphabet():
    """GPT-2's character for each byte value (index = byte)."""
    printable = set(range(ord("!"), ord("~") + 1))
    printable |= set(range(0xA1, 0xAC + 1))
    printable |= set(range(0xAE, 0xFF + 1))
    alphabet, next_spare = [], 0x100
    for b in range(256):
        if b in printable:
            alphabet.append(chr(b))
        else:
            alphabet.append(chr(next_spare))
            next_spare += 1
    return alphabet


def read_ranks(path):
    ranks = {}
    with open(path, "rb") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            fields = line.split()
            if len(fields) != 2:
                raise ValueError(f"{path}:{number}: expected `base64 rank`")
            token, rank = base64.b64decode(fields[0], validate=True), int(fields[1])
            if token in ranks:
                raise ValueError(f"{path}:{number}: token listed twice")
            ranks[token] = rank
    # Ids are ranks, so they must be exactly 0..n-1 to be a vocabulary.
    if sorted(ranks.values()) != list(range(len(ranks))):
        raise ValueError(f"{path}: ranks are not 0..{len(ranks) - 1}, each once")
    return ranks


def merge_of(token, rank, ranks):
    """The two parts the token was merged from: BPE on its bytes, allowed only
    the tokens that existed before it (rank < its rank), lowest rank first."""
    parts = [token[i:i + 1] for i in range(len(token))]
    while len(parts) > 2:
        best, best_rank = None, rank
        for i in range(len(parts) - 1):
            r = ranks.get(parts[i] + parts[i + 1])
            if r is not None and r < best_rank:
                best, best_rank = i, r
        if best is None:
            break
        parts[best:best + 2] = [parts[best] + parts[best + 1]]
    if len(parts) != 2:
        raise ValueError(f"token {token!r} (rank {rank}) is not one merge of earlier tokens "
                         f"(BPE leaves {len(parts)} parts)")
    return parts


def derive(ranks):
    alphabet = byte_alphabet()

    def text(token):
        return "".join(alphabet[b] for b in token)

    by_rank = sorted(ranks, key=ranks.get)
    if any(len(by_rank[b]) != 1 for b in range(256)) or len(set(by_rank[:256])) != 256:
        raise ValueError("ranks 0..255 are not the 256 single bytes")
    encoder = {text(token): rank for rank, token in enumerate(by_rank)}
    encoder[END_OF_TEXT] = len(by_rank)
    merges = []
    for rank in range(256, len(by_rank)):
        left, right = merge_of(by_rank[rank], rank, ranks)
        merges.append(f"{text(left)} {text(right)}")
    return encoder, merges


def write_checked(path, content):
    """Writes to a temporary file and renames it, after checking the hash."""
    data = content.encode("utf-8")
    name = os.path.basename(path)
    digest = hashlib.sha256(data).hexdigest()
    if digest != PUBLISHED_SHA256[name]:
        raise ValueError(f"derived {name} is not GPT-2's published one (sha256 {digest})")
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "wb") as f:
        f.write(data)
    os.replace(temporary, path)


def up_to_date(outputs, inputs):
    try:
        oldest = min(os.path.getmtime(p) for p in outputs)
    except OSError:
        return False
    return all(os.path.getmtime(p) < oldest for p in inputs)


def main(argv):
    if len(argv) != 3:
        print(f"usage: {argv[0]} RANKS OUT_DIR", file=sys.stderr)
        return 2
    ranks_path, out_dir = argv[1], argv[2]
    encoder_path = os.path.join(out_dir, "encoder.json")
    merges_path = os.path.join(out_dir, "vocab.bpe")
    if up_to_date([encoder_path, merges_path], [ranks_path, os.path.abspath(__file__)]):
        return 0
    try:
        encoder, merges = derive(read_ranks(ranks_path))
        os.makedirs(out_dir, exist_ok=True)
        # ensure_ascii as GPT-2's published encoder.json has it ("\u0120the").
        write_checked(encoder_path, json.dumps(encoder))
        write_checked(merges_path, "#version: 0.2\n" + "".join(m + "\n" for m in merges))
    except (OSError, ValueError) as e:
        print(f"gpt2_vocab_files: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
