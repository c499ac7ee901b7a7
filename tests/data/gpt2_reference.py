#!/usr/bin/env python3
"""GPT-2's token ids for a list of texts from two independent encoders, for
gpt2_reference_test.cpp:

  tiktoken    OpenAI's encoder (Rust), an Encoding built from GPT-2's
              published ranks (gpt2.tiktoken) and the split pattern of
              GPT-2's encoder.py. encode_ordinary, so that <|endoftext|> in
              a text is plain text, as GPT-2's encoder treats it.
  tokenizers  Hugging Face's byte-level BPE (Rust), from the encoder.json
              and vocab.bpe that gpt2_vocab_files.py derives from the same
              ranks, with no added tokens (<|endoftext|> is plain text).

They share no code and read different files, so their agreement also checks
the derived files.

Usage: gpt2_reference.py TEXTS_JSON ANSWER_JSON RANKS VOCAB_DIR
TEXTS_JSON is an array of strings; ANSWER_JSON gets
{"tiktoken": [[id, ...], ...], "tokenizers": [[id, ...], ...]}.
Exit status 1, with the reason, when an encoder cannot be built or misses
GPT-2's known ids for "Hello" and " world" (a sign of wrong files rather than
of a tokenizer difference).
"""
import base64
import json
import os
import sys

import tiktoken
from tokenizers import Tokenizer, models, pre_tokenizers

# GPT-2's pre-tokenizer pattern as encoder.py publishes it (contractions,
# optional space before letters, digits or other symbols, then whitespace).
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

# Ids everyone agrees GPT-2 gives these texts (GPT-2's encoder.json).
KNOWN_IDS = {"Hello": [15496], " world": [995], "Hello world": [15496, 995]}


def tiktoken_encoder(ranks_path):
    ranks = {}
    with open(ranks_path, "rb") as f:
        for line in f:
            if line.strip():
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
    encoding = tiktoken.Encoding("gpt2_reference", pat_str=GPT2_PATTERN, mergeable_ranks=ranks,
                                 special_tokens={"<|endoftext|>": len(ranks)})
    return encoding.encode_ordinary


def tokenizers_encoder(vocab_dir):
    tokenizer = Tokenizer(
        models.BPE.from_file(os.path.join(vocab_dir, "encoder.json"),
                             os.path.join(vocab_dir, "vocab.bpe")))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    return lambda text: tokenizer.encode(text).ids


def main(argv):
    if len(argv) != 5:
        print(f"usage: {argv[0]} TEXTS_JSON ANSWER_JSON RANKS VOCAB_DIR", file=sys.stderr)
        return 2
    texts_path, answer_path, ranks_path, vocab_dir = argv[1:]
    with open(texts_path, encoding="utf-8") as f:
        texts = json.load(f)
    encoders = {"tiktoken": tiktoken_encoder(ranks_path),
                "tokenizers": tokenizers_encoder(vocab_dir)}
    for name, encode in encoders.items():
        for text, ids in KNOWN_IDS.items():
            if encode(text) != ids:
                print(f"gpt2_reference: {name} encodes {text!r} to {encode(text)}, not GPT-2's "
                      f"{ids}", file=sys.stderr)
                return 1
    answer = {name: [encode(text) for text in texts] for name, encode in encoders.items()}
    with open(answer_path, "w", encoding="utf-8") as f:
        json.dump(answer, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
